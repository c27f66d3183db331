package events_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/internal/testenv/redirecttest"
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

// TestDialOnTheSameHost: the redirect policy leaves the WebSocket handshake
// itself alone: a STOMP server on the configured host is reached.
func TestDialOnTheSameHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v12.stomp"}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		if _, _, err := ws.Read(r.Context()); err != nil { // CONNECT
			return
		}
		_ = ws.Write(r.Context(), websocket.MessageText, []byte("CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\x00"))
		_, _, _ = ws.Read(r.Context())
	}))
	defer srv.Close()
	ws := "ws://" + strings.TrimPrefix(srv.URL, "http://") + events.DefaultPath
	conn, err := events.Dial(context.Background(), ws, nil, "bot", "passcode", "/", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.MustDisconnect()
}
