package testproc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Process is a server started for the tests, its output in a log file.
type Process struct {
	// Name names it in errors; Log is the path of its log file.
	Name, Log string
	// Cmd is the started command.
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts bin with args in dir, its output appended to logPath; env is
// added to this process's environment. The child dies with the tests
// (Detach).
func Start(name, bin, dir, logPath string, env []string, args ...string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	Detach(cmd)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill ends the process at once and waits for it; the servers started for
// tests hold nothing worth a graceful shutdown.
func (p *Process) Kill() {
	if !p.Exited() {
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// KillAll kills ps, the last started first.
func KillAll(ps []*Process) {
	for _, p := range slices.Backward(ps) {
		p.Kill()
	}
}

// LogTail returns the last 4 KiB of the log.
func (p *Process) LogTail() string { return FileTail(p.Log, 4<<10) }

// FileTail returns the last n bytes of the file at path, for an error about
// a server whose log it is ("" when it cannot be read).
func FileTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// WaitReady polls ready every 200 ms until it holds, the process exits or
// timeout passes; what names what is awaited in the error. An exit whose log
// says the address was taken wraps ErrAddrInUse, for Retry.
func (p *Process) WaitReady(ctx context.Context, what string, timeout time.Duration, ready func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(ctx) {
			return nil
		}
		select {
		case <-p.done:
			log := p.LogTail()
			err := fmt.Errorf("%s exited while starting (%v):\n%s", p.Name, p.err, log)
			if strings.Contains(strings.ToLower(log), "address already in use") { // Java says "Address"
				err = fmt.Errorf("%w: %w", ErrAddrInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s after %s:\n%s", p.Name, what, timeout, p.LogTail())
		case <-tick.C:
		}
	}
}

// HTTPOK is a ready check: a GET of url through hc (nil: a client with a
// 2-second timeout) answers 200; token, when set, is sent as a bearer token.
func HTTPOK(hc *http.Client, url, token string) func(context.Context) bool {
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Second}
	}
	return func(ctx context.Context) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// TCPOpen is a ready check: addr accepts a connection.
func TCPOpen(addr string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		var d net.Dialer
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
}
