package serve

import (
	"strings"
	"testing"
	"time"
)

// TestTiming: a timing that cannot work is refused naming its flag, and
// health waits two of the longest waits plus the grace unless told.
func TestTiming(t *testing.T) {
	ok := Timing{Interval: 10 * time.Minute, Jitter: 0.1, Grace: time.Minute, EventsWindow: time.Second}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	if got := ok.Stale(); got != 23*time.Minute {
		t.Errorf("stale after %s, want 23m", got)
	}
	for _, tc := range []struct {
		flag   string
		change func(*Timing)
	}{
		{"--interval", func(t *Timing) { t.Interval = 0 }},
		{"--jitter", func(t *Timing) { t.Jitter = 1 }},
		{"--shutdown-grace", func(t *Timing) { t.Grace = -time.Second }},
		{"--stale-after", func(t *Timing) { t.StaleAfter = -time.Second }},
		{"--events-window", func(t *Timing) { t.EventsWindow = 0 }},
		{"--stale-after", func(t *Timing) { t.StaleAfter = 11 * time.Minute }},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			bad := ok
			tc.change(&bad)
			if err := bad.Check(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
				t.Errorf("%+v: %v, want an error naming %s", bad, err, tc.flag)
			}
		})
	}
	if got := (Timing{Interval: time.Minute, StaleAfter: time.Hour}).Stale(); got != time.Hour {
		t.Errorf("--stale-after 1h gives %s", got)
	}
}
