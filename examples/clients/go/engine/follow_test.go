package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
	"google.golang.org/protobuf/proto"
)

// Client.Follow against real servers of the test's own (ALLFIVES_BIN; skipped without
// it, and .ci/go-client sets it): two replicas on one Redis behind a proxy, the
// follower's replica killed mid-match; a connection gone silent behind the proxy. A
// mover moves for both seats straight to a server; the follower must see every change
// once, in order, to the match's end. Nothing is timed: every wait is a hang guard.

var fastFollow = FollowPolicy{Liveness: 30 * time.Second, FirstBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}

func serverBin(t *testing.T) string {
	bin := os.Getenv("ALLFIVES_BIN")
	if bin == "" {
		t.Skip("ALLFIVES_BIN is not set (the allfives server binary; .ci/go-client sets it)")
	}
	return bin
}

type process struct {
	cmd  *exec.Cmd
	port int
}

// kill is SIGKILL: gone at once, its streams broken, nothing drained.
func (p *process) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

var serving = regexp.MustCompile(`serving addr=127\.0\.0\.1:(\d+)`)

// startServer starts the server on a port it picks, waits (30 s at most) for it to serve.
func startServer(t *testing.T, keys string, args ...string) *process {
	cmd := exec.Command(serverBin(t), append([]string{"--addr", "127.0.0.1:0", "--metrics-addr", "off", "--shutdown-delay-ms", "0"}, args...)...)
	cmd.Env = append(os.Environ(), "ALLFIVES_KEYS="+keys)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd}
	t.Cleanup(p.kill)
	ports := make(chan int, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if m := serving.FindStringSubmatch(lines.Text()); m != nil {
				port, _ := strconv.Atoi(m[1])
				ports <- port
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case p.port = <-ports:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not say it was serving within 30 s")
	}
	return p
}

func randomKeys() string {
	key := make([]byte, 32)
	rand.Read(key)
	return "1:" + hex.EncodeToString(key)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts a redis-server of the test's own, waits (30 s at most) for PONG.
func startRedis(t *testing.T) string {
	port := freePort(t)
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 300 {
		if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			fmt.Fprint(conn, "PING\r\n")
			reply, _ := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			if reply == "+PONG\r\n" {
				return fmt.Sprintf("redis://127.0.0.1:%d", port)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("redis-server did not answer PING within 30 s")
	return ""
}

// proxy is a TCP proxy the test steers: each connection goes to upstream (changed for
// the connections that come after); silence makes every connection open now stop
// forwarding both ways while staying open (a half-open network).
type proxy struct {
	listener net.Listener
	upstream atomic.Int64
	mu       sync.Mutex
	links    []*link
}

type link struct {
	client, server net.Conn
	silent         atomic.Bool
}

func startProxy(t *testing.T, upstream int) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{listener: l}
	p.upstream.Store(int64(upstream))
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, k := range p.links {
			k.client.Close()
			k.server.Close()
		}
	})
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.upstream.Load()))
			if err != nil {
				client.Close()
				continue
			}
			k := &link{client: client, server: server}
			p.mu.Lock()
			p.links = append(p.links, k)
			p.mu.Unlock()
			go k.pump(client, server)
			go k.pump(server, client)
		}
	}()
	return p
}

func (k *link) pump(from, to net.Conn) {
	buf := make([]byte, 16*1024)
	for {
		n, err := from.Read(buf)
		if err != nil {
			break
		}
		if !k.silent.Load() {
			to.Write(buf[:n]) // silent: read and dropped
		}
	}
	if !k.silent.Load() { // a silent link stays open: only the test's end closes it
		k.client.Close()
		k.server.Close()
	}
}

func (p *proxy) addr() string { return p.listener.Addr().String() }

func (p *proxy) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.links {
		k.silent.Store(true)
	}
}

// mover moves for both seats of a two-human match, straight to its server.
type mover struct {
	c     *Client
	creds map[uint32][]byte
	token []byte
	view  *allfivesv1.GameView
	made  [][]byte // every state id, in order
}

func newMover(t *testing.T, ctx context.Context, port int) *mover {
	c, err := Dial(fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second, DefaultRetry)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	game, err := c.NewGame(ctx, &allfivesv1.NewGameRequest{
		Rules: &allfivesv1.Rules{Players: 2, Target: 100}, Seats: []*allfivesv1.SeatSetup{{Claim: true}, {Claim: true}}, Viewer: proto.Uint32(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &mover{c: c, creds: map[uint32][]byte{}, token: game.GetState(), view: game.GetView(), made: [][]byte{game.GetView().GetStateId()}}
	for _, cred := range game.GetCredentials() {
		m.creds[cred.GetSeat()] = cred.GetCredential()
	}
	return m
}

func (m *mover) over() bool { return m.view.GetPhase() == allfivesv1.Phase_PHASE_OVER }

// step makes one deal, play or draw.
func (m *mover) step(t *testing.T, ctx context.Context) {
	var r interface {
		GetState() []byte
		GetView() *allfivesv1.GameView
	}
	var err error
	if m.view.GetPhase() == allfivesv1.Phase_PHASE_DEALING {
		r, err = m.c.Deal(ctx, &allfivesv1.DealRequest{State: m.token, Viewer: proto.Uint32(0), Credential: m.creds[0]})
	} else {
		seat := m.view.GetTurn()
		var seen *allfivesv1.ScoreResponse
		if seen, err = m.c.Score(ctx, &allfivesv1.ScoreRequest{State: m.token, Viewer: proto.Uint32(seat), Credential: m.creds[seat]}); err == nil {
			if v := seen.GetView(); v.GetMustDraw() {
				r, err = m.c.Draw(ctx, &allfivesv1.DrawRequest{State: m.token, Seat: seat, Viewer: proto.Uint32(seat), Credential: m.creds[seat]})
			} else {
				move := v.GetLegalMoves()[0]
				r, err = m.c.Play(ctx, &allfivesv1.PlayRequest{State: m.token, Seat: seat, Tile: move.GetTile(), End: move.GetEnd(), Viewer: proto.Uint32(seat), Credential: m.creds[seat]})
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	m.token, m.view = r.GetState(), r.GetView()
	m.made = append(m.made, m.view.GetStateId())
}

// follower follows the match through addr as seat 0 with Client.Follow, recording what it is told.
type follower struct {
	mu     sync.Mutex
	seen   []*allfivesv1.WatchChange
	causes []error
	beats  int // heartbeats
	done   chan error
}

func follow(t *testing.T, ctx context.Context, addr string, policy FollowPolicy, m *mover) *follower {
	c, err := Dial(addr, 10*time.Second, DefaultRetry)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f := &follower{done: make(chan error, 1)}
	policy.OnRewatch = func(cause error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.causes = append(f.causes, cause)
	}
	policy.OnMessage = func(m *allfivesv1.WatchResponse) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if m.GetHeartbeat() != nil {
			f.beats++
		}
	}
	req := &allfivesv1.WatchRequest{State: m.token, Viewer: proto.Uint32(0), Credential: m.creds[0]}
	go func() {
		f.done <- c.Follow(ctx, req, m.view, policy, func(change *allfivesv1.WatchChange) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.seen = append(f.seen, change)
			return nil
		})
	}()
	return f
}

// saw waits (60 s at most) until the follower has seen id.
func (f *follower) saw(t *testing.T, id []byte) {
	for range 600 {
		f.mu.Lock()
		n := len(f.seen)
		seen := n > 0 && bytes.Equal(f.seen[n-1].GetView().GetStateId(), id)
		f.mu.Unlock()
		if seen {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the follower did not see the latest state within 60 s")
}

// heard waits (60 s at most) until the follower has been told of n heartbeats.
func (f *follower) heard(t *testing.T, n int) {
	for range 600 {
		f.mu.Lock()
		beats := f.beats
		f.mu.Unlock()
		if beats >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the follower was told of no heartbeat within 60 s")
}

// finish waits (120 s at most) for the follow to end by itself at the match's end, and
// checks every change came once, in order, each after the one before it or a
// catch-up, to the match's last state.
func (f *follower) finish(t *testing.T, m *mover) {
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("the follow ended with %v", err)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("the follow did not end within 120 s of the match's end")
	}
	index := map[string]int{}
	for i, id := range m.made {
		index[string(id)] = i
	}
	previous, at := m.made[0], 0
	for _, change := range f.seen {
		v := change.GetView()
		i, ok := index[string(v.GetStateId())]
		if !ok || i <= at {
			t.Fatalf("change %d came after change %d (doubled, or out of order)", i, at)
		}
		if !change.GetCatchUp() && !bytes.Equal(v.GetPreviousStateId(), previous) {
			t.Fatalf("a change was missed before change %d", i)
		}
		previous, at = v.GetStateId(), i
	}
	if at != len(m.made)-1 || f.seen[len(f.seen)-1].GetView().GetPhase() != allfivesv1.Phase_PHASE_OVER {
		t.Fatalf("the follow ended at change %d of %d", at, len(m.made)-1)
	}
}

func TestFollowResumesOnTheOtherReplicaWhenItsOwnIsKilledMidMatch(t *testing.T) {
	serverBin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	redis := []string{"--match-store", "redis", "--match-store-url", startRedis(t)}
	keys := randomKeys() // replicas of one deployment: one Redis, one key ring
	first, other := startServer(t, keys, redis...), startServer(t, keys, redis...)
	p := startProxy(t, first.port)
	m := newMover(t, ctx, other.port) // the match goes on on the other replica
	f := follow(t, ctx, p.addr(), fastFollow, m)
	for range 10 {
		m.step(t, ctx)
	}
	f.saw(t, m.made[len(m.made)-1]) // its stream is open on the first replica
	first.kill()                    // no draining: the stream breaks
	p.upstream.Store(int64(other.port))
	for !m.over() {
		m.step(t, ctx)
	}
	f.finish(t, m)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.causes) == 0 {
		t.Fatal("the follow was not cut by the kill")
	}
	t.Logf("%d changes of %d, watched again after %v", len(f.seen), len(m.made)-1, f.causes)
}

func TestFollowWatchesAgainWhenItsConnectionGoesSilent(t *testing.T) {
	server := startServer(t, randomKeys(), "--match-store", "memory", "--watch-heartbeat-secs", "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := startProxy(t, server.port)
	m := newMover(t, ctx, server.port)
	f := follow(t, ctx, p.addr(), fastFollow, m)
	for range 5 {
		m.step(t, ctx)
	}
	f.saw(t, m.made[len(m.made)-1])
	f.mu.Lock()
	before, beats := len(f.causes), f.beats
	f.mu.Unlock()
	f.heard(t, beats+1) // a heartbeat (after a second without a move) made the bound 2 s
	p.silence()         // the follower's connection stays open, and nothing arrives
	for range 5 {
		m.step(t, ctx)
	}
	f.saw(t, m.made[len(m.made)-1]) // told once the silence was noticed, on a new connection
	f.mu.Lock()
	silent := false
	for _, cause := range f.causes[before:] {
		silent = silent || errors.Is(cause, ErrSilent)
	}
	f.mu.Unlock()
	if !silent {
		t.Fatalf("not watched again for silence: %v", f.causes)
	}
	for !m.over() {
		m.step(t, ctx)
	}
	f.finish(t, m)
}

func TestFollowOfAMatchOverEndsAtOnceAndCancellingEndsIt(t *testing.T) {
	server := startServer(t, randomKeys(), "--match-store", "memory")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newMover(t, ctx, server.port)
	followCtx, stop := context.WithCancel(ctx)
	f := follow(t, followCtx, fmt.Sprintf("127.0.0.1:%d", server.port), fastFollow, m)
	stop()
	select {
	case err := <-f.done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled follow ended with %v, not context.Canceled", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a cancelled follow did not end")
	}
	for !m.over() {
		m.step(t, ctx)
	}
	f = follow(t, ctx, fmt.Sprintf("127.0.0.1:%d", server.port), fastFollow, m)
	select {
	case err := <-f.done:
		if err != nil || len(f.seen) != 0 {
			t.Fatalf("a follow of a match over ended with %v after %d changes", err, len(f.seen))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a follow of a match over did not end")
	}
}

// A policy of only a hook takes the defaults for its zero fields: a zero liveness bound
// and zero backoffs would open stream after stream, each on a new connection.
func TestAPolicyWithZeroDurationsFollowsOnTheDefaults(t *testing.T) {
	server := startServer(t, randomKeys(), "--match-store", "memory")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newMover(t, ctx, server.port)
	f := follow(t, ctx, fmt.Sprintf("127.0.0.1:%d", server.port), FollowPolicy{}, m)
	for range 3 {
		m.step(t, ctx)
	}
	f.saw(t, m.made[len(m.made)-1])
	f.mu.Lock()
	rewatches := len(f.causes)
	f.mu.Unlock()
	if rewatches != 0 { // the default bound is 35 s, and the server never ends a stream here
		t.Fatalf("watched again %d times on a server that ended no stream", rewatches)
	}
}

// Cancelling a follow mid-stream, and while it waits between streams, ends it with
// context.Canceled.
func TestCancellingAFollowMidStreamOrBetweenStreamsEndsIt(t *testing.T) {
	server := startServer(t, randomKeys(), "--match-store", "memory", "--max-connection-age-secs", "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newMover(t, ctx, server.port)
	ended := func(f *follower, when string) {
		select {
		case err := <-f.done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("a follow cancelled %s ended with %v, not context.Canceled", when, err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("a follow cancelled %s did not end", when)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", server.port)
	followCtx, stop := context.WithCancel(ctx)
	f := follow(t, followCtx, addr, fastFollow, m)
	m.step(t, ctx)
	f.saw(t, m.made[len(m.made)-1]) // its stream is open
	stop()
	ended(f, "mid-stream")
	// Waits of an hour between streams: once the connection has aged and the follow
	// was told why its stream ended, it is waiting.
	followCtx, stop = context.WithCancel(ctx)
	f = follow(t, followCtx, addr, FollowPolicy{FirstBackoff: time.Hour, MaxBackoff: time.Hour}, m)
	for range 600 {
		f.mu.Lock()
		n := len(f.causes)
		f.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.mu.Lock()
	n := len(f.causes)
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("want one stream ended before the wait, got %d", n)
	}
	stop()
	ended(f, "between streams")
}

func TestAFinalRefusalEndsTheFollowWithItsError(t *testing.T) {
	server := startServer(t, randomKeys(), "--match-store", "memory")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newMover(t, ctx, server.port)
	m.creds[0] = m.creds[1] // seat 1's credential, for seat 0
	f := follow(t, ctx, fmt.Sprintf("127.0.0.1:%d", server.port), fastFollow, m)
	select {
	case err := <-f.done:
		if !IsReason(err, allfivesv1.ErrorReason_CREDENTIAL_INVALID) || len(f.causes) != 0 {
			t.Fatalf("want CREDENTIAL_INVALID, not watched again; got %v after %v", err, f.causes)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a refused follow did not end")
	}
}

func TestFollowBackoffIsJitteredWithinItsStepAndCapped(t *testing.T) {
	p := FollowPolicy{FirstBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}
	for failures, step := range map[int]time.Duration{1: 100, 2: 200, 3: 400, 4: 400, 40: 400} {
		step *= time.Millisecond
		for range 200 {
			if wait := p.backoff(failures, false); wait < step/2 || wait > step {
				t.Fatalf("after an error, failure %d: %v, not within [%v, %v]", failures, wait, step/2, step)
			}
			if wait := p.backoff(failures, true); wait < 0 || wait > step {
				t.Fatalf("after an OK end, failure %d: %v, not within [0, %v]", failures, wait, step)
			}
		}
	}
}
