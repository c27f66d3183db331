package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/waldur/waldur-gitops/failure"
	"github.com/waldur/waldur-gitops/internal/version"
)

func init() { register((*app).versionCommand) }

func (a *app) versionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the version, commit, Go version and platform",
		Example: `  waldur-gitops version
  waldur-gitops version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(output)
			if err != nil {
				return err
			}
			if err := a.writeVersion(f); err != nil {
				return failure.Classify(failure.ClassOutput, err)
			}
			return nil
		},
	}
	outputFlag(cmd, &output, "one line each")
	return cmd
}

// writeVersion prints the build's version information in format f.
func (a *app) writeVersion(f format) error {
	v := version.Get()
	if f.data() {
		return writeData(a.stdout, f, v)
	}
	_, err := fmt.Fprintf(a.stdout, "waldur-gitops %s\ncommit:   %s\ngo:       %s\nplatform: %s\n", v.Version, v.Commit, v.GoVersion, v.Platform)
	return err
}
