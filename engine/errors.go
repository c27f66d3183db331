package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/waldur/waldur-gitops/changeset"
	"github.com/waldur/waldur-gitops/guard"
	"github.com/waldur/waldur-gitops/waldur"
)

// Class is what kind of failure ended (or marked) a run. Every failure the
// engine returns carries one, and exitCodes turns it into the documented
// process exit code: the same failure gives the same code from every verb.
type Class int

// The classes, one per documented exit code.
const (
	ClassNone     Class = iota // success
	ClassDiff                  // a dry run found differences
	ClassConfig                // bad flags or config
	ClassPartial               // some resources or identities were skipped, the rest done
	ClassWaldur                // reading Waldur, or moving its orders, failed
	ClassOutput                // writing the output directory or the run report failed
	ClassGit                   // fetching, committing or pushing to the GitOps repository failed
	ClassGuard                 // a guard refused the run
	ClassKeycloak              // reconciling the Keycloak groups failed
	ClassCluster               // reading a cluster failed
	ClassCheck                 // a diagnose check failed
	ClassApply                 // applying to a cluster failed for some or all tenants
	// ClassRender is a render the config or a template makes impossible: a
	// config error, wherever the render runs (the approval probe included).
	ClassRender
	// ClassStopped is a run stopped from outside: its deadline expired or a
	// signal came (the error carries a *Stopped, which picks the code).
	ClassStopped
)

// The documented process exit codes (README.md, docs/run-report.md).
const (
	ExitOK          = 0
	ExitDiff        = 1   // a dry run found differences
	ExitUsage       = 2   // bad flags or config
	ExitPartial     = 3   // some resources were skipped, the rest succeeded
	ExitWaldur      = 4   // reading Waldur (or moving its orders) failed
	ExitOutput      = 5   // writing the output or the run report failed
	ExitGit         = 6   // fetching, committing or pushing to the GitOps repository failed
	ExitGuard       = 7   // a guard refused the run
	ExitKeycloak    = 8   // reconciling the Keycloak groups failed
	ExitCluster     = 9   // reading a cluster failed
	ExitCheckFailed = 10  // diagnose: at least one check failed
	ExitApply       = 11  // applying to a cluster failed for some or all tenants
	ExitDeadline    = 12  // the run's deadline (--timeout, run_timeout) expired
	ExitInterrupted = 130 // SIGINT stopped the run (128 + 2, as shells report it)
	ExitTerminated  = 143 // SIGTERM stopped the run (128 + 15)
)

// exitCodes is the one table from failure class to exit code.
var exitCodes = map[Class]int{
	ClassNone:     ExitOK,
	ClassDiff:     ExitDiff,
	ClassConfig:   ExitUsage,
	ClassRender:   ExitUsage,
	ClassPartial:  ExitPartial,
	ClassWaldur:   ExitWaldur,
	ClassOutput:   ExitOutput,
	ClassGit:      ExitGit,
	ClassGuard:    ExitGuard,
	ClassKeycloak: ExitKeycloak,
	ClassCluster:  ExitCluster,
	ClassCheck:    ExitCheckFailed,
	ClassApply:    ExitApply,
	ClassStopped:  ExitDeadline,
}

// ExitCode is the process exit code of the class.
func (c Class) ExitCode() int { return exitCodes[c] }

// Error is a failure with its class and, when a stage failed, the stage.
type Error struct {
	Stage string
	Class Class
	Err   error
	// Contained is set when the failure concerns some tenants only (objects
	// the API server refused): the stages after it go on for the others.
	Contained bool
}

// Contained marks err as limited to some tenants; see Error.Contained.
func Contained(err error) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Contained = true
		return &c
	}
	return &Error{Class: ClassOf(err), Err: err, Contained: true}
}

func isContained(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Contained
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Classify gives err the class c, unless it has one already; nil stays nil.
// A refusal of the deletion guard is always ClassGuard.
func Classify(c Class, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.As(err, new(*guard.Error)) {
		c = ClassGuard
	}
	return &Error{Class: c, Err: err}
}

// Errorf formats an error of class c.
func Errorf(c Class, format string, args ...any) error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// ClassOf is the class of err: ClassNone for nil, ClassConfig for an error
// that carries no class (a flag or config problem found before any stage).
func ClassOf(err error) Class {
	if err == nil {
		return ClassNone
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	if errors.As(err, new(*guard.Error)) {
		return ClassGuard
	}
	return ClassConfig
}

// ExitCode is the process exit code for err; a stopped run's depends on
// what stopped it.
func ExitCode(err error) int {
	if s := StopOfErr(err); s != nil && ClassOf(err) == ClassStopped {
		return s.exitCode()
	}
	return ClassOf(err).ExitCode()
}

// classify gives a stage's failure its class. After something was published
// a failure is never "bad config" (exit 2 reads as "nothing happened"): it
// takes the stage's own class and says what was published.
func classify(st stage, err error, pub *Published) error {
	err = Classify(st.class, err)
	c, contained := ClassOf(err), isContained(err)
	if pub != nil && pub.Wrote {
		if c == ClassConfig {
			c = st.class
		}
		what := "the apply went through"
		if pub.Ref != "" {
			what = "commit " + pub.Ref + " was pushed"
		}
		err = fmt.Errorf("%w (%s)", err, what)
	}
	return &Error{Stage: st.name, Class: c, Err: err, Contained: contained}
}

// verdict is the run's one exit decision: a failure first; then, in a dry
// run, differences (exit 1, whether or not something was skipped); then
// skipped resources or identities (exit 3).
func verdict(req Request, out *Outcome, err error) error {
	if err != nil {
		return err
	}
	changes := changeset.Set{Entries: out.Report.Changes}
	if out.diffStage != "" {
		changes.Entries = changes.Filter(func(e changeset.Entry) bool { return e.Stage == out.diffStage })
	}
	if req.DryRun && changes.Changed() {
		return Errorf(ClassDiff, "differences found")
	}
	counts := map[string]int{}
	for _, e := range changes.ByAction(changeset.Skip) {
		if what, ok := partialCauses[e.Cause]; ok {
			counts[what]++
		}
	}
	var parts []string
	for _, what := range skipOrder {
		if counts[what] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[what], what))
		}
	}
	if len(parts) > 0 {
		return Errorf(ClassPartial, "%s skipped (listed in the output), the rest done%s", strings.Join(parts, " and "), unreadCause(out.State))
	}
	return nil
}

// unreadCause names every offering not read, with why, for the verdict.
func unreadCause(st *waldur.State) string {
	if st == nil || len(st.Unread) == 0 {
		return ""
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(st.Unread)) {
		fmt.Fprintf(&b, "; offering %q not read: %s", name, st.Unread[name])
	}
	return b.String()
}

// The things a partial run names, in the order the verdict names them.
const (
	partialOfferings = "offering(s) not read"
	partialResources = "resource(s)"
	partialMembers   = "member(s)"
	partialKeycloak  = "Keycloak group(s) or membership(s)"
)

// partialCauses names the skip entries that make a run partial, by cause:
// offerings not read, resources the render skipped or kept in doubt at the
// publish, members left out, and every Keycloak group or membership skipped.
var partialCauses = map[changeset.Cause]string{
	changeset.CauseOfferingUnread: partialOfferings,

	changeset.CauseInvalidLimits: partialResources,
	changeset.CauseInvalidName:   partialResources,
	changeset.CauseNameConflict:  partialResources,
	changeset.CauseQuotaMapping:  partialResources,
	changeset.CauseTemplate:      partialResources,
	changeset.CauseUnknownState:  partialResources,
	changeset.CauseRenderFailed:  partialResources,
	changeset.CauseTenantKept:    partialResources,

	changeset.CauseMemberLeftOut: partialMembers,

	changeset.CauseUserNotFound:   partialKeycloak,
	changeset.CauseGroupConflict:  partialKeycloak,
	changeset.CauseParentBlocked:  partialKeycloak,
	changeset.CauseNotAttempted:   partialKeycloak,
	changeset.CauseRealmFailure:   partialKeycloak,
	changeset.CauseNoCredentials:  partialKeycloak,
	changeset.CauseNotLookedUp:    partialKeycloak,
	changeset.CauseKeycloakFailed: partialKeycloak,
}

// skipOrder is the order the verdict names them in.
var skipOrder = []string{partialOfferings, partialResources, partialMembers, partialKeycloak}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
