package engine

import (
	"github.com/waldur/waldur-gitops/internal/redact"
	"github.com/waldur/waldur-gitops/report"
)

// progressStage is the stage Progress is told of: its name, calls and, when
// it failed, its error as the report keeps it.
func progressStage(name string, calls map[string]int, err error) report.Stage {
	st := report.Stage{Name: name, Calls: calls}
	if err != nil {
		st.Error = redact.String(err.Error())
	}
	return st
}
