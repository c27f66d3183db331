package rabbittest

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-stomp/stomp/v3"
)

// Publisher sends messages the way Waldur Mastermind does: a plain STOMP SEND
// to /amq/queue/<name> on the queue's vhost, as the administrator, with the
// JSON envelope as body. It keeps one connection per vhost and dials again
// once when a send fails (the broker restarted). Safe for concurrent use.
type Publisher struct {
	b     *Broker
	mu    sync.Mutex
	conns map[string]*stomp.Conn
}

// Publisher returns a publisher on b.
func (b *Broker) Publisher() *Publisher { return &Publisher{b: b, conns: map[string]*stomp.Conn{}} }

// Publish sends body to queue on vhost.
func (p *Publisher) Publish(_ context.Context, vhost, queue string, body []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		c := p.conns[vhost]
		if c == nil {
			c, err = stomp.Dial("tcp", p.b.STOMPAddr(), stomp.ConnOpt.Login(p.b.AdminUser, p.b.AdminPassword), stomp.ConnOpt.Host(vhost))
			if err != nil {
				continue
			}
			p.conns[vhost] = c
		}
		if err = c.Send("/amq/queue/"+queue, "application/json", body, stomp.SendOpt.Receipt,
			stomp.SendOpt.Header("persistent", "true")); err == nil {
			return nil
		}
		_ = c.MustDisconnect()
		delete(p.conns, vhost)
	}
	return fmt.Errorf("publish to queue %s on vhost %s: %w", queue, vhost, err)
}

// Close disconnects every connection.
func (p *Publisher) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for v, c := range p.conns {
		_ = c.Disconnect()
		delete(p.conns, v)
	}
}

// Publish sends body to queue on vhost through the broker's own publisher
// (so that a *Broker is a waldurtest.EventBroker).
func (b *Broker) Publish(ctx context.Context, vhost, queue string, body []byte) error {
	b.mu.Lock()
	if b.pub == nil {
		b.pub = b.Publisher()
	}
	p := b.pub
	b.mu.Unlock()
	return p.Publish(ctx, vhost, queue, body)
}
