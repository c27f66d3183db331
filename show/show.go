// Package show prints what a run did, from the engine's outcome: the plan of
// a dry run against the GitOps repository, a render, an apply, a Keycloak
// run, for people (text) or for machines (JSON or YAML through Output.Data).
// The commands choose which; the run report's own summary is report.Run's.
package show

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"sigs.k8s.io/yaml"
)

// Output is where and how an outcome is shown.
type Output struct {
	W io.Writer
	// Data, when set, writes a value as the machine output (JSON or YAML);
	// nil: text for people.
	Data func(v any) error
	// Colour colours the diff of a plan (a terminal).
	Colour bool
	// Log receives what is not output (nil: discarded).
	Log *slog.Logger
}

// WriteData prints v as indented JSON, or as YAML made from that JSON:
// both formats carry the same fields under the same names.
func WriteData(w io.Writer, asYAML bool, v any) error {
	if !asYAML {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the output as yaml: %w", err)
	}
	_, err = w.Write(b)
	return err
}

func (o Output) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}
