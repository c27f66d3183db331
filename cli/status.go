package cli

import (
	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/status"
)

func init() { register((*app).statusCommand) }

func (a *app) statusCommand() *cobra.Command {
	var req status.Request
	var output string
	cmd := &cobra.Command{
		Use:   "status [--config C | --server URL [--token-file F]] [-o json|yaml]",
		Short: "Show the last runs and what waits and why, from the run report or a running serve",
		Example: `  waldur-gitops status --config site.yaml
  waldur-gitops status --server http://waldur-gitops.sync.svc:9090 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(output)
			if err != nil {
				return err
			}
			req.Load = a.loadConfig
			s, err := status.Get(cmd.Context(), req)
			if err != nil {
				return err
			}
			if f.data() {
				return writeData(a.stdout, f, s)
			}
			return status.WriteText(a.stdout, s)
		},
	}
	cmd.Flags().StringVar(&req.Server, "server", "", "a running serve (http://host:9090): read its /status.json, not the report file")
	cmd.Flags().StringVar(&req.TokenFile, "token-file", "", "with --server: a file holding serve.status_token_file's token, to see names")
	outputFlag(cmd, &output, "the picture for a terminal")
	return cmd
}
