package testproc

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProcess(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	t.Run("an exit while starting carries the log and a taken address", func(t *testing.T) {
		p, err := Start("busy", "/bin/sh", dir, filepath.Join(dir, "busy.log"), []string{"MSG=address already in use"}, "-c", `echo "listen: $MSG"; exit 3`)
		if err != nil {
			t.Fatal(err)
		}
		err = p.WaitReady(ctx, "nowhere", 10*time.Second, func(context.Context) bool { return false })
		if !errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), "listen: address already in use") || !strings.Contains(err.Error(), "busy exited while starting") {
			t.Errorf("err %v", err)
		}
		if !p.Exited() {
			t.Error("not Exited after its exit")
		}
	})
	t.Run("ready, then killed", func(t *testing.T) {
		p, err := Start("sleeper", "/bin/sh", dir, filepath.Join(dir, "sleeper.log"), nil, "-c", "echo up; exec sleep 60")
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		if err := p.WaitReady(ctx, "third poll", 10*time.Second, func(context.Context) bool { calls++; return calls == 3 }); err != nil {
			t.Fatal(err)
		}
		KillAll([]*Process{p})
		if !p.Exited() || !strings.Contains(p.LogTail(), "up") {
			t.Errorf("exited %v, log %q", p.Exited(), p.LogTail())
		}
	})
	t.Run("a timeout names what was awaited", func(t *testing.T) {
		p, err := Start("slow", "/bin/sleep", dir, filepath.Join(dir, "slow.log"), nil, "60")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		err = p.WaitReady(ctx, "127.0.0.1:1", 300*time.Millisecond, TCPOpen("127.0.0.1:1"))
		if err == nil || !strings.Contains(err.Error(), "slow not ready at 127.0.0.1:1 after 300ms") {
			t.Errorf("err %v", err)
		}
	})
}

func TestSharedStartsOnceAndStops(t *testing.T) {
	var sh Shared[int]
	starts, stops := 0, 0
	start := func() (int, func(), error) { starts++; return 7, func() { stops++ }, nil }
	for range 3 {
		if v := sh.Need(t, "thing", start); v != 7 {
			t.Fatalf("Need = %d", v)
		}
	}
	sh.Stop()
	if starts != 1 || stops != 1 {
		t.Errorf("started %d, stopped %d times; want once each", starts, stops)
	}
	var never Shared[int]
	never.Stop() // nothing started: nothing to stop
}
