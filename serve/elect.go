package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/waldur/waldur-gitops/status"
	"github.com/waldur/waldur-gitops/stop"
)

// PodNameEnv is the environment variable a replica's identity is read from
// (the downward API's metadata.name).
const PodNameEnv = "POD_NAME"

// Identity is this replica's name in the election: the pod name from
// PodNameEnv, else the host name plus a random suffix, so that two
// processes on one host never share an identity.
func Identity() string {
	if n := os.Getenv(PodNameEnv); n != "" {
		return n
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "waldur-gitops"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return host + "-" + hex.EncodeToString(b)
}

// PodIPEnv is the environment variable a replica's address is read from
// (the downward API's status.podIP), for the status page it advertises.
const PodIPEnv = "POD_IP"

// AdvertisedURL is the status page this replica advertises to the others:
// http://$POD_IP:<the port serve listens on>/, "" without POD_IP.
func AdvertisedURL(listen net.Addr) string {
	ip := os.Getenv(PodIPEnv)
	tcp, ok := listen.(*net.TCPAddr)
	if ip == "" || !ok {
		return ""
	}
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(tcp.Port)) + "/"
}

// Election runs serve's replicas on a Lease: the one holding it leads and
// runs its term (Run's lead), the others stand by. It also holds the write
// permit: a replica may start a write only while its lease has at least
// RenewDeadline left, that is until LeaseDuration − RenewDeadline after the
// last renewal that went through (counted from when it was sent). Bind puts
// the permit on a run's context. Its methods are safe for concurrent use.
type Election struct {
	// Lock is the Lease (resourcelock.LeaseLock); its Identity is this replica's.
	Lock resourcelock.Interface
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Health, when set, is told of every change of role and leader.
	Health *Health
	// Metrics, when set, is told of every change of role
	// (metrics.Recorder.SetLeader); Run starts it as a standby.
	Metrics interface{ SetLeader(leading bool) }
	Log     *slog.Logger

	termMu  sync.Mutex // held by a term while it runs
	mu      sync.Mutex
	leading bool
	leader  string
	until   time.Time     // the permit: zero when revoked
	changed chan struct{} // closed and replaced on every change of the permit
}

// renewed extends the permit after a write of the Lease sent at sent went
// through with holder as its holder.
func (e *Election) renewed(sent time.Time, holder string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if holder != e.Lock.Identity() {
		e.setPermit(time.Time{}) // a release
		return
	}
	e.setPermit(sent.Add(e.LeaseDuration - e.RenewDeadline))
}

// setPermit changes the permit; e.mu is held.
func (e *Election) setPermit(until time.Time) {
	e.until = until
	if e.changed != nil {
		close(e.changed)
	}
	e.changed = make(chan struct{})
}

// permit returns the end of the permit (zero: none) and a channel closed
// when it changes.
func (e *Election) permit() (time.Time, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	if !e.leading {
		return time.Time{}, e.changed
	}
	return e.until, e.changed
}

// Bind returns a context that is cancelled, with a stop.Stopped cause of
// kind StopLease, as soon as this replica may no longer start a write: its
// lease has less than RenewDeadline left, or it stopped leading. Every write
// of a run (push, Keycloak, Waldur) is a request made with the run's
// context, so this one check reaches them all.
func (e *Election) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	lapsed := func() (bool, *time.Timer, <-chan struct{}) {
		until, changed := e.permit()
		left := time.Until(until)
		if left <= 0 {
			cancel(&stop.Stopped{Kind: stop.ByLease})
			return true, nil, nil
		}
		return false, time.NewTimer(left), changed
	}
	over, t, changed := lapsed() // a run without a permit does not start
	if over {
		return ctx, func() { cancel(context.Canceled) }
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-changed:
				t.Stop()
			case <-t.C:
			}
			if over, t, changed = lapsed(); over {
				return
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Leading reports whether this replica leads, and the leader's identity
// ("" while none is known).
func (e *Election) Leading() (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading, e.leader
}

// Leadership is this replica's role for the status page; a standby whose
// lock reads the leader's advertised page (LeaseLock) links to it.
func (e *Election) Leadership() status.Leadership {
	leading, who := e.Leading()
	l := status.Leadership{Leader: leading, Elected: true, Identity: e.Lock.Identity(), LeaderIdentity: who}
	if a, ok := e.Lock.(interface{ LeaderURL() string }); ok && !leading && who != "" {
		l.LeaderURL = a.LeaderURL()
	}
	return l
}

// Run stands for election until ctx ends. Each time this replica becomes
// the leader it calls lead with a context that ends when the lease is lost
// or ctx ends; lead must return once its context ends (the run in progress
// may take its grace on a stop, never on a lost lease: Bind cancels it).
// After a lost lease the replica stands by again. The lease is released
// only after lead returned, so a standby takes over a stopped leader at once.
func (e *Election) Run(ctx context.Context, lead func(context.Context)) error {
	if e.Metrics != nil {
		e.Metrics.SetLeader(false) // standing by until the Lease is won
	}
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	go func() {
		<-ctx.Done()
		e.termMu.Lock() // the release must not come before the term's last write
		stopElect()
		e.termMu.Unlock()
	}()
	for electCtx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &permitLock{Interface: e.Lock, e: e}, Name: e.Lock.Describe(),
			LeaseDuration: e.LeaseDuration, RenewDeadline: e.RenewDeadline, RetryPeriod: e.RetryPeriod,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) { e.term(ctx, lctx, lead) },
				OnStoppedLeading: func() { e.setLeading(false) },
				OnNewLeader:      e.setLeader,
			},
		})
		if err != nil {
			return fmt.Errorf("leader election on %s: %w", e.Lock.Describe(), err)
		}
		le.Run(electCtx)
	}
	return nil
}

// term is one term as the leader: lead runs until the lease is lost (lctx)
// or the process stops (ctx).
func (e *Election) term(ctx, lctx context.Context, lead func(context.Context)) {
	e.termMu.Lock()
	defer e.termMu.Unlock()
	if ctx.Err() != nil {
		return // the process is stopping: a term won just now runs nothing
	}
	e.setLeading(true)
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(lctx, func() {
		e.setLeading(false) // revokes the permit before anything else
		cancel()
	})
	defer stop()
	lead(tctx)
}

// setLeading records a change of role.
func (e *Election) setLeading(on bool) {
	e.mu.Lock()
	changed := e.leading != on
	e.leading = on
	if on {
		e.leader = e.Lock.Identity()
	}
	e.setPermit(e.until)
	leader := e.leader
	e.mu.Unlock()
	if !changed {
		return
	}
	if on {
		e.log().Info("leading: this replica runs the cycles", "identity", e.Lock.Identity(), "lease", e.Lock.Describe())
	} else {
		e.log().Warn("standing by: this replica no longer holds the lease", "identity", e.Lock.Identity(), "lease", e.Lock.Describe())
	}
	if e.Metrics != nil {
		e.Metrics.SetLeader(on)
	}
	e.Health.SetRole(on, leader)
}

// setLeader records the leader client-go observed.
func (e *Election) setLeader(id string) {
	e.mu.Lock()
	e.leader = id
	leading := e.leading
	e.mu.Unlock()
	if id != e.Lock.Identity() {
		e.log().Info("the leader is another replica", "leader", id, "identity", e.Lock.Identity())
	}
	e.Health.SetRole(leading, id)
}

func (e *Election) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// permitLock is the Lease with the permit kept up to date: every write of
// the Lease that goes through moves it.
type permitLock struct {
	resourcelock.Interface
	e *Election
}

// Create creates the Lease, holding it.
func (l *permitLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Create(ctx, r)
	if err == nil {
		l.e.renewed(sent, r.HolderIdentity)
	}
	return err
}

// Update renews, takes or releases the Lease.
func (l *permitLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := l.Interface.Update(ctx, r)
	if err == nil {
		l.e.renewed(sent, r.HolderIdentity)
	}
	return err
}
