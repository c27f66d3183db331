package engine

import (
	"time"

	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/report"
)

// progressStage is the stage Progress is told of: its name, calls, duration
// and, when it failed, its error as the report keeps it.
func progressStage(name string, calls map[string]int, err error, took time.Duration) report.Stage {
	st := report.Stage{Name: name, Calls: calls, DurationSeconds: took.Seconds()}
	if err != nil {
		st.Error = redact.String(err.Error())
	}
	return st
}
