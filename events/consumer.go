package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/waldur/waldur-gitops/waldur"
)

// HeartBeat is the STOMP heart-beat both ways, as the site agent's.
const HeartBeat = 10 * time.Second

// Offering is what the consumer needs of one configured offering.
type Offering struct {
	// Name is the offering's config name (logs, metrics, health).
	Name string
	// UUID is the offering's UUID; events naming another are ignored.
	UUID waldur.UUID
	// URL is the web-STOMP endpoint, ws:// or wss://.
	URL string
	// Passcode is the STOMP passcode: the offering's API token.
	Passcode func() (string, error)
	// Registrar registers the offering's queues.
	Registrar Registrar
	// HTTPClient dials the WebSocket (nil: a new client); Dial uses a copy
	// that follows no redirect.
	HTTPClient *http.Client
}

// Consumer consumes the events of every offering into a Coalescer.
type Consumer struct {
	// Offerings are the offerings to consume, one goroutine each.
	Offerings []Offering
	// Sink gathers the events into triggers.
	Sink *Coalescer
	// Metrics, when set, are updated.
	Metrics *Metrics
	// Log gets the consumer's lines (nil: none).
	Log *slog.Logger
	// MinBackoff and MaxBackoff bound the wait before a reconnection
	// (defaults 1 s and 60 s); it doubles per failure, with up to 25 % jitter.
	MinBackoff, MaxBackoff time.Duration
	// ClosedAfterSubscribe is how soon after SUBSCRIBE a closed connection
	// counts as a missing queue (web-STOMP closes the WebSocket without an
	// ERROR frame then); default 3 s.
	ClosedAfterSubscribe time.Duration

	mu    sync.Mutex
	state map[string]*OfferingState
}

// OfferingState is the health of one offering's consumer.
type OfferingState struct {
	// Offering is the offering's config name.
	Offering string `json:"offering"`
	// Connected is true while a queue of the offering is subscribed.
	Connected bool `json:"connected"`
	// Queues are the queues Waldur handed out.
	Queues []string `json:"queues,omitempty"`
	// Since is when the consumer last subscribed.
	Since *time.Time `json:"since,omitempty"`
	// LastError is the last failure, cleared on a successful subscription.
	LastError string `json:"last_error,omitempty"`
	// Received counts the messages received.
	Received int `json:"received"`
	// Reconnects counts connections after the first.
	Reconnects int `json:"reconnects"`

	everConnected bool
}

// State returns the consumers' states, by offering name order.
func (c *Consumer) State() []OfferingState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []OfferingState
	for _, s := range c.state {
		cp := *s
		cp.Queues = slices.Clone(s.Queues)
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b OfferingState) int { return strings.Compare(a.Offering, b.Offering) })
	return out
}

func (c *Consumer) update(name string, f func(*OfferingState)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		c.state = map[string]*OfferingState{}
	}
	s := c.state[name]
	if s == nil {
		s = &OfferingState{Offering: name}
		c.state[name] = s
	}
	f(s)
}

func (c *Consumer) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// Run consumes until ctx ends; it returns nil then. One goroutine per queue.
func (c *Consumer) Run(ctx context.Context) error {
	if c.Sink == nil {
		return errors.New("events consumer: no sink")
	}
	var wg sync.WaitGroup
	for i := range c.Offerings {
		o := c.Offerings[i]
		c.update(o.Name, func(*OfferingState) {})
		wg.Add(1)
		go func() { defer wg.Done(); c.runOffering(ctx, o) }()
	}
	wg.Wait()
	return nil
}

// errReregister marks a failure that needs the queues registered again.
var errReregister = errors.New("the queue must be registered again")

// runOffering keeps the offering's queues consumed: register, then one
// loop per queue; a loop that needs a registration stops them all.
func (c *Consumer) runOffering(ctx context.Context, o Offering) {
	failures := 0
	for ctx.Err() == nil {
		queues, err := o.Registrar.Register(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.fail(o, fmt.Errorf("waldur event registration failed: %w", err))
			failures++
			c.sleep(ctx, failures)
			continue
		}
		names := make([]string, len(queues))
		for i, q := range queues {
			names[i] = q.Name
		}
		c.update(o.Name, func(s *OfferingState) { s.Queues = names })
		qctx, cancel := context.WithCancel(ctx)
		reregister := make(chan struct{}, len(queues))
		var wg sync.WaitGroup
		var subscribed atomic.Bool
		for _, q := range queues {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c.consumeQueue(qctx, o, q, &subscribed) {
					reregister <- struct{}{}
				}
			}()
		}
		select {
		case <-ctx.Done():
		case <-reregister:
			c.log().Info("registering the event queue again", "offering", o.Name)
		}
		cancel()
		wg.Wait()
		if subscribed.Load() {
			failures = 0
		}
		failures++
		c.sleep(ctx, failures)
	}
}

// consumeQueue connects and consumes q until ctx ends (false) or the queue
// must be registered again (true), reconnecting with back-off.
func (c *Consumer) consumeQueue(ctx context.Context, o Offering, q Queue, subscribed *atomic.Bool) bool {
	failures := 0
	for ctx.Err() == nil {
		got, err := c.session(ctx, o, q)
		c.setConnected(o, false)
		if ctx.Err() != nil {
			return false
		}
		if got {
			failures = 0
			subscribed.Store(true)
		}
		if err != nil {
			c.fail(o, err)
			if errors.Is(err, errReregister) {
				return true
			}
		}
		failures++
		c.sleep(ctx, failures)
	}
	return false
}

func (c *Consumer) fail(o Offering, err error) {
	c.log().Warn("waldur events", "offering", o.Name, "error", err.Error())
	c.update(o.Name, func(s *OfferingState) { s.LastError = err.Error() })
}

func (c *Consumer) setConnected(o Offering, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	if c.Metrics != nil {
		c.Metrics.Connected.WithLabelValues(o.Name).Set(v)
	}
	reconnect := false
	c.update(o.Name, func(s *OfferingState) {
		if s.Connected == up {
			return
		}
		s.Connected = up
		if up && s.everConnected {
			s.Reconnects++
			reconnect = true
		}
		if up {
			s.everConnected = true
			t := time.Now().UTC()
			s.Since, s.LastError = &t, ""
		} else {
			s.Since = nil
		}
	})
	if reconnect && c.Metrics != nil {
		c.Metrics.Reconnects.WithLabelValues(o.Name).Inc()
	}
}

// Backoff is the wait before attempt n (n ≥ 1): min × 2^(n-1), at most max,
// plus up to 25 % jitter drawn from r in [0, 1).
func Backoff(n int, minWait, maxWait time.Duration, r float64) time.Duration {
	d := minWait
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	return d + time.Duration(float64(d)*0.25*r)
}

func (c *Consumer) sleep(ctx context.Context, n int) {
	lo, hi := c.MinBackoff, c.MaxBackoff
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = time.Minute
	}
	t := time.NewTimer(Backoff(n, lo, hi, rand.Float64()))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// session is one connection: connect, subscribe, consume. got says whether
// it subscribed successfully.
func (c *Consumer) session(ctx context.Context, o Offering, q Queue) (got bool, err error) {
	pass, err := o.Passcode()
	if err != nil {
		return false, err
	}
	conn, err := Dial(ctx, o.URL, o.HTTPClient, q.Login, pass, q.VHost, c.log())
	if err != nil {
		if isAuthFailure(err) {
			return false, fmt.Errorf("%w: %w", errReregister, err)
		}
		return false, err
	}
	defer func() { _ = conn.MustDisconnect() }()
	sub, err := conn.Subscribe("/amq/queue/"+q.Name, stomp.AckClientIndividual,
		stomp.SubscribeOpt.Header("prefetch-count", "1"))
	if err != nil {
		return false, fmt.Errorf("subscribe to queue %s: %w", q.Name, err)
	}
	subscribed := time.Now()
	c.setConnected(o, true)
	c.log().Info("waldur events: subscribed", "offering", o.Name, "queue", q.Name, "vhost", q.VHost)
	closedAfter := c.ClosedAfterSubscribe
	if closedAfter <= 0 {
		closedAfter = 3 * time.Second
	}
	delivered := false
	for {
		var msg *stomp.Message
		var ok bool
		select {
		case <-ctx.Done():
			return true, nil
		case msg, ok = <-sub.C:
		}
		if !ok || msg == nil {
			return true, c.closed(q, subscribed, delivered, closedAfter, errors.New("the subscription ended"))
		}
		if msg.Err != nil {
			if isQueueGone(msg.Err) {
				return true, fmt.Errorf("%w: queue %s on vhost %s: %w", errReregister, q.Name, q.VHost, describe(msg.Err))
			}
			return true, c.closed(q, subscribed, delivered, closedAfter, describe(msg.Err))
		}
		delivered = true
		c.handle(o, msg.Body)
		if err := conn.Ack(msg); err != nil {
			return true, fmt.Errorf("ack on queue %s: %w", q.Name, err)
		}
	}
}

// closed judges a connection that ended: web-STOMP closes the WebSocket
// without an ERROR frame when the queue does not exist, so a close right
// after SUBSCRIBE before any message is treated as a missing queue.
func (c *Consumer) closed(q Queue, subscribed time.Time, delivered bool, within time.Duration, err error) error {
	if !delivered && time.Since(subscribed) < within {
		return fmt.Errorf("%w: queue %s on vhost %s: the connection closed right after SUBSCRIBE (the queue is probably gone): %w",
			errReregister, q.Name, q.VHost, err)
	}
	return fmt.Errorf("lost the connection to queue %s: %w", q.Name, err)
}

// handle decodes and records one message; it never fails: a bad message is
// logged and acked.
func (c *Consumer) handle(o Offering, body []byte) {
	e, err := Decode(body)
	c.update(o.Name, func(s *OfferingState) { s.Received++ })
	if err != nil {
		c.log().Warn("waldur events: a malformed message was dropped", "offering", o.Name, "error", err.Error(), "bytes", len(body))
		c.ignored("malformed")
		return
	}
	if c.Metrics != nil {
		c.Metrics.Received.WithLabelValues(e.ObjectType).Inc()
	}
	if e.OfferingUUID != "" && o.UUID != "" && e.OfferingUUID != o.UUID {
		c.ignored("other_offering")
		return
	}
	if !e.Actionable() {
		c.ignored("not_actionable")
		return
	}
	c.log().Debug("waldur event", "offering", o.Name, "object_type", e.ObjectType, "resource", string(e.Resource), "order", string(e.Order), "order_state", e.OrderState)
	c.Sink.Add(e, time.Now())
}

func (c *Consumer) ignored(reason string) {
	if c.Metrics != nil {
		c.Metrics.Ignored.WithLabelValues(reason).Inc()
	}
}

// describe is an error with the ERROR frame's body, which says more than
// its message header.
func describe(err error) error {
	var se *stomp.Error
	if errors.As(err, &se) && se.Frame != nil && len(se.Frame.Body) > 0 {
		return fmt.Errorf("%s: %s", se.Message, strings.TrimSpace(string(se.Frame.Body)))
	}
	return err
}

func isQueueGone(err error) bool {
	s := describe(err).Error()
	return strings.Contains(s, "NOT_FOUND") || strings.Contains(s, "not_found") || strings.Contains(s, "cancelled subscription")
}

func isAuthFailure(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "access refused") || strings.Contains(s, "bad connect") || strings.Contains(s, "login failed") ||
		strings.Contains(s, "not_allowed") || strings.Contains(s, "access_refused")
}
