package events_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/internal/redirecttest"
)

// TestDialRefusesRedirects: a web-STOMP URL whose handshake is redirected to
// another host opens no WebSocket there (the passcode, the Waldur token, would
// follow in the CONNECT frame), and the error names the URL's keys and both
// URLs.
func TestDialRefusesRedirects(t *testing.T) {
	const passcode = "waldur-token-s3cret"
	for _, code := range redirecttest.Codes {
		t.Run(http.StatusText(code), func(t *testing.T) {
			rec := redirecttest.NewRecorder(t)
			from := redirecttest.Redirect(t, code, rec.URL)
			ws := "ws://" + strings.TrimPrefix(from.URL, "http://") + events.DefaultPath
			_, err := events.Dial(context.Background(), ws, nil, "bot", passcode, "/", slog.New(slog.DiscardHandler))
			redirecttest.AssertRefused(t, err, events.URLKey, from.URL, rec.URL, passcode)
			rec.AssertUntouched(t)
		})
	}
}
