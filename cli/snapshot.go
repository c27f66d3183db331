package cli

import (
	"bytes"
	"time"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/atomicfile"
	"github.com/waldur/waldur-gitops/internal/version"
	"github.com/waldur/waldur-gitops/waldur"
	"github.com/waldur/waldur-gitops/waldur/source"
)

func init() { register((*app).snapshotCommand) }

func (a *app) snapshotCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "snapshot --config C --out state.json",
		Short: "Record the Waldur state the renderer needs, for offline rendering with render --snapshot",
		Example: `  # record the state, then render and review it offline
  waldur-gitops snapshot --config site.yaml --out state.json
  waldur-gitops render --config site.yaml --snapshot state.json --out out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErr("--out is required (use - for stdout)")
			}
			if out != "-" {
				// Refuse a device, FIFO or directory before reading Waldur.
				if err := atomicfile.Check(out); err != nil {
					return failure.Classify(failure.ClassOutput, err)
				}
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			src := &source.API{Offerings: cfg.Offerings, Log: a.log, Tune: tuneWaldurClient}
			st, err := src.Read(cmd.Context())
			if err != nil {
				return err
			}
			var b bytes.Buffer
			snap := &waldur.Snapshot{ToolVersion: version.Version, TakenAt: time.Now().UTC().Truncate(time.Second), State: *st}
			if err := waldur.WriteSnapshot(&b, snap); err != nil {
				return failure.Classify(failure.ClassOutput, err)
			}
			if out == "-" {
				_, err = a.stdout.Write(b.Bytes())
				return err
			}
			if err := atomicfile.Write(out, b.Bytes()); err != nil {
				return failure.Classify(failure.ClassOutput, err)
			}
			a.log.Info("wrote snapshot", "file", out, "offerings", len(st.Offerings))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "snapshot file to write (- for stdout)")
	return cmd
}
