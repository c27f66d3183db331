// Package failure holds the classes of failure a run can end with and the
// one table from class to process exit code (README.md, docs/run-report.md),
// so that every package can say what kind of failure it returns where it
// decides it, and every verb exits with the same code for the same failure.
// The engine's cycle gives a stage's unclassified failure the stage's class
// and decides the run's verdict (engine/errors.go).
package failure

import (
	"errors"
	"fmt"
	"strings"

	"github.com/waldur/waldur-gitops/guard"
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
	// signal came (the error carries a *stop.Stopped, which picks the code).
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

// IsContained reports whether err is marked Contained.
func IsContained(err error) bool {
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
// what stopped it (the stop in its chain says, package stop).
func ExitCode(err error) int {
	var s stopCoder
	if ClassOf(err) == ClassStopped && errors.As(err, &s) {
		return s.StopExitCode()
	}
	return ClassOf(err).ExitCode()
}

// stopCoder is what stopped a run: its exit code depends on the stop.
type stopCoder interface {
	error
	StopExitCode() int
}

// Incomplete is the config error of a run whose config misses what its
// stages need (each of errs a key or credential): exit 2, every problem
// named, one per line when there are several, as config validation lists
// its problems.
func Incomplete(errs []error) error {
	return Classify(ClassConfig, &incompleteError{errs: errs})
}

type incompleteError struct{ errs []error }

func (e *incompleteError) Error() string {
	var b strings.Builder
	b.WriteString("the config is incomplete for this command, nothing was done: ")
	if len(e.errs) == 1 {
		b.WriteString(e.errs[0].Error())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problem(s)", len(e.errs))
	for _, err := range e.errs {
		b.WriteString("\n  " + strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return b.String()
}

func (e *incompleteError) Unwrap() []error { return e.errs }

// Unjoin lists the errors err joins (errors.Join): err alone when it joins
// none, none for nil.
func Unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
