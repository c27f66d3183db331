package testproc

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Group is the processes of one test setup (Argo CD's, the Flux
// controllers), started in a temporary directory that holds their logs and
// working files.
type Group struct {
	// Dir is the directory; Stop removes it unless the keep variable is set.
	Dir string
	// Procs are the started processes, in order.
	Procs []*Process
	keep  string
	once  sync.Once
}

// NewGroup makes a Group in a new temporary directory named by pattern (as
// os.MkdirTemp); keepEnv names the environment variable that, when set,
// keeps the directory after Stop for reading the logs.
func NewGroup(pattern, keepEnv string) (*Group, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, err
	}
	return &Group{Dir: dir, keep: keepEnv}, nil
}

// Run starts bin with args in Dir, its output in <Dir>/<name>.log; env is
// added to this process's environment (Start).
func (g *Group) Run(name, bin string, env []string, args ...string) (*Process, error) {
	p, err := Start(name, bin, g.Dir, filepath.Join(g.Dir, name+".log"), env, args...)
	if err != nil {
		return nil, err
	}
	g.Procs = append(g.Procs, p)
	return p, nil
}

// Stop kills the processes, the last started first, and removes Dir unless
// the keep variable is set. Stop is safe to call more than once.
func (g *Group) Stop() {
	g.once.Do(func() {
		KillAll(g.Procs)
		if os.Getenv(g.keep) == "" {
			_ = os.RemoveAll(g.Dir)
		}
	})
}

// WaitHTTP waits until a GET of url answers 200 (HTTPOK), as WaitReady.
func (p *Process) WaitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	return p.WaitReady(ctx, url, timeout, HTTPOK(nil, url, ""))
}

// WaitTCP waits until addr accepts a connection (TCPOpen), as WaitReady.
func (p *Process) WaitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	return p.WaitReady(ctx, addr, timeout, TCPOpen(addr))
}
