package events

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/waldur/waldur-gitops/internal/hostbound"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// DefaultPath is the web-STOMP path Waldur serves (the site agent's
// stomp_ws_path default).
const DefaultPath = "/rmqws-stomp"

// dialTimeout bounds the WebSocket handshake and the STOMP CONNECT.
const dialTimeout = 20 * time.Second

// URLKey names, in a refused redirect, the config keys the web-STOMP URL
// comes from.
const URLKey = "the web-STOMP URL (waldur_api_url, stomp_ws_host, stomp_ws_port, stomp_ws_path)"

// Dial opens a STOMP 1.2 session over a WebSocket to RabbitMQ's web-STOMP
// (text messages, one STOMP frame each) as login on vhost, with heart-beats
// of HeartBeat both ways. The handshake follows no redirect (hc nil: a new
// client): on another host the session would get the passcode, the
// offering's Waldur API token. The passcode never appears in an error.
func Dial(ctx context.Context, wsURL string, hc *http.Client, login, passcode, vhost string, log *slog.Logger) (*stomp.Conn, error) {
	where := redactURL(wsURL)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{
		HTTPClient:   hostbound.Client(hc, URLKey, hostbound.None),
		Subprotocols: []string{"v12.stomp", "stomp"},
	})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("connect to web-STOMP %s: %w", where, err)
	}
	ws.SetReadLimit(16 << 20)
	// The net.Conn lives as long as the session, not the dial: its context
	// is the caller's.
	nc := websocket.NetConn(ctx, ws, websocket.MessageText)
	conn, err := stomp.Connect(nc,
		stomp.ConnOpt.Login(login, passcode),
		stomp.ConnOpt.Host(vhost),
		stomp.ConnOpt.AcceptVersion(stomp.V12),
		stomp.ConnOpt.HeartBeat(HeartBeat, HeartBeat),
		stomp.ConnOpt.Logger(stompLogger{log}),
	)
	if err != nil {
		nc.Close()
		msg := redact.Default().With(passcode).String(describe(err).Error())
		if isAuthFailure(err) {
			return nil, fmt.Errorf("STOMP login refused by RabbitMQ at %s for user %q on vhost %q (the passcode is the offering's Waldur API token): %s",
				where, login, vhost, msg)
		}
		return nil, fmt.Errorf("STOMP CONNECT to %s as %q on vhost %q: %s", where, login, vhost, msg)
	}
	return conn, nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the web-STOMP URL"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

// stompLogger sends the library's lines to slog at debug level.
type stompLogger struct{ l *slog.Logger }

func (s stompLogger) Debugf(f string, v ...any)   { s.l.Debug("stomp: " + fmt.Sprintf(f, v...)) }
func (s stompLogger) Infof(f string, v ...any)    { s.l.Debug("stomp: " + fmt.Sprintf(f, v...)) }
func (s stompLogger) Warningf(f string, v ...any) { s.l.Debug("stomp: " + fmt.Sprintf(f, v...)) }
func (s stompLogger) Errorf(f string, v ...any)   { s.l.Debug("stomp: " + fmt.Sprintf(f, v...)) }
func (s stompLogger) Debug(m string)              { s.l.Debug("stomp: " + m) }
func (s stompLogger) Info(m string)               { s.l.Debug("stomp: " + m) }
func (s stompLogger) Warning(m string)            { s.l.Debug("stomp: " + m) }
func (s stompLogger) Error(m string)              { s.l.Debug("stomp: " + m) }

// URL is the web-STOMP URL of a Waldur API URL: the API host, port 443
// (wss) or 80 (ws) unless port is set, path DefaultPath unless path is set.
// host overrides the API host; tls chooses wss (nil: as the API URL's
// scheme).
func URL(apiURL, host string, port int, path string, tls *bool) (string, error) {
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("waldur_api_url %q is not a URL", apiURL)
	}
	secure := u.Scheme == "https"
	if tls != nil {
		secure = *tls
	}
	if host == "" {
		host = u.Hostname()
	}
	scheme, p := "ws", 80
	if secure {
		scheme, p = "wss", 443
	}
	if port == 0 && u.Port() != "" && host == u.Hostname() && secure == (u.Scheme == "https") {
		// The API on a port of its own: web-STOMP there too unless told.
		fmt.Sscanf(u.Port(), "%d", &p)
	}
	if port != 0 {
		p = port
	}
	if path == "" {
		path = DefaultPath
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(p)), path), nil
}
