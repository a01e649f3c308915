package standin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/template"
)

// maxBody is the most of a request body a stand-in reads.
const maxBody = 32 << 20

// The bodies of the answers a stand-in makes up itself.
const (
	conflictAnswer = `{"type":"about:blank","title":"A request with the same idempotency key is still being processed","status":409}`
	mismatchAnswer = `{"type":"about:blank","title":"The idempotency key was already used with a different request payload","status":422}`
	failAnswer     = `{"error":"internal server error"}`
	problemType    = "application/problem+json"
)

// HTTPConfig is how the HTTP stand-in answers.
type HTTPConfig struct {
	IdempotencyHeader string        // e.g. "Idempotency-Key"; "" means the provider dedupes nothing (every request is performed)
	Status            int           // default 200
	Body              string        // response body; "{seq}" in it is replaced by the number of performed effects so far (1, 2, …); default ""
	ContentType       string        // default "application/json"
	Latency           time.Duration // added before answering
	FailAfterEffect   string        // "", "timeout" or "500": the uncertain failure — perform the effect, then lose the answer
	FailTimes         int           // how many performed effects get that failure (the first N); 0 with FailAfterEffect set means 1
}

// HTTP is a stand-in for an HTTP service: every request is recorded as a
// Call and answered as its HTTPConfig says, with the idempotency semantics
// of the Idempotency-Key header draft when IdempotencyHeader is set.
type HTTP struct {
	name   string
	cfg    HTTPConfig
	key    template.Template
	srv    *http.Server
	url    string
	served chan struct{}

	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
	handlers  sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	gen       int // bumped by Reset; calls of an older generation are not recorded
	seq       int
	performed int
	failed    int
	delivery  string
	calls     []*Call
	idem      map[string]*idemEntry
	holds     []*Hold
}

// idemEntry is what the stand-in keeps of the first request with an
// idempotency key: its body and, once performed, its real answer.
type idemEntry struct {
	body   []byte
	done   bool
	status int
	answer string
}

// StartHTTP starts an HTTP stand-in named name on a free 127.0.0.1 port.
// key is the effect key template, expanded with gjson paths over the call's
// envelope JSON ({body.orderId}, {headers.idempotency-key}, {path}, …).
func StartHTTP(name string, cfg HTTPConfig, key template.Template) (*HTTP, error) {
	if cfg.Status == 0 {
		cfg.Status = http.StatusOK
	}
	if cfg.Status < 100 || cfg.Status > 599 {
		return nil, fmt.Errorf("stand-in %s: status %d is not an HTTP status", name, cfg.Status)
	}
	if cfg.ContentType == "" {
		cfg.ContentType = "application/json"
	}
	switch cfg.FailAfterEffect {
	case "", "timeout", "500":
	default:
		return nil, fmt.Errorf("stand-in %s: fail after effect %q is none of \"timeout\" and \"500\"", name, cfg.FailAfterEffect)
	}
	if cfg.FailTimes < 0 {
		return nil, fmt.Errorf("stand-in %s: fail times %d is negative", name, cfg.FailTimes)
	}
	if cfg.FailAfterEffect != "" && cfg.FailTimes == 0 {
		cfg.FailTimes = 1
	}
	if cfg.Latency < 0 {
		cfg.Latency = 0
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stand-in %s: %w", name, err)
	}
	h := &HTTP{
		name:    name,
		cfg:     cfg,
		key:     key,
		url:     "http://" + ln.Addr().String(),
		served:  make(chan struct{}),
		closing: make(chan struct{}),
		idem:    map[string]*idemEntry{},
	}
	h.srv = &http.Server{
		Handler:           http.HandlerFunc(h.serve),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(h.served)
		_ = h.srv.Serve(ln) // http.ErrServerClosed after Close
	}()
	return h, nil
}

// URL is the stand-in's base URL, "http://127.0.0.1:PORT".
func (h *HTTP) URL() string { return h.url }

// Name is the stand-in's name.
func (h *HTTP) Name() string { return h.name }

// Calls returns a copy of the calls recorded since the start or the last
// Reset, in Seq order. A call is recorded once its outcome is known: a call
// held before it is performed is not among them until it goes on or is cut.
func (h *HTTP) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return copyCalls(h.calls)
}

// Reset forgets the calls, the stored idempotency answers, the fail counts
// and the numbering (Seq and {seq} start again at 1). Holds not yet reached
// stay. A call in progress across a Reset is answered but not recorded.
func (h *HTTP) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	h.seq, h.performed, h.failed = 0, 0, 0
	h.calls = nil
	h.idem = map[string]*idemEntry{}
}

// SetDelivery labels the calls that arrive from now on with id ("" none).
func (h *HTTP) SetDelivery(id string) {
	h.mu.Lock()
	h.delivery = id
	h.mu.Unlock()
}

// Close stops the stand-in: it cuts every held call, ends every
// connection and waits for every handler to return. It is idempotent.
func (h *HTTP) Close() error {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.closed = true
		close(h.closing)
		h.mu.Unlock()
		h.closeErr = h.srv.Close()
		h.handlers.Wait()
		<-h.served
	})
	return h.closeErr
}

// outcome is what the stand-in decided to do with a call on its arrival.
type outcome int

const (
	perform  outcome = iota
	replay           // same key, same body, first one done
	conflict         // same key, first one still in progress
	mismatch         // same key, another body
)

func (h *HTTP) serve(w http.ResponseWriter, r *http.Request) {
	c := h.newCall(r)

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		hijackClose(w)
		return
	}
	h.handlers.Add(1)
	defer h.handlers.Done()
	h.seq++
	c.Seq = h.seq
	c.Delivery = h.delivery
	gen := h.gen
	hold := h.claimHold(r.Method, r.URL.Path)
	what, entry, status, answer := h.lookUp(c.IdemKey, c.Body)
	h.mu.Unlock()

	if hold != nil && !hold.after {
		if !h.wait(hold, c, r) {
			h.abandon(w, c, gen, entry)
			hold.finish()
			return
		}
	}
	if !h.latency() {
		h.abandon(w, c, gen, entry)
		return
	}

	h.mu.Lock()
	status, answer, contentType, fault := h.respond(c, what, gen, entry, status, answer)
	c.Status, c.Answer = status, answer
	h.record(gen, c)
	h.mu.Unlock()

	if hold != nil && hold.after {
		if !h.wait(hold, c, r) {
			h.mu.Lock()
			c.Status = 0 // no answer was sent
			h.mu.Unlock()
			hijackClose(w)
			hold.finish()
			return
		}
	}
	if fault == "timeout" {
		hijackClose(w)
		return
	}
	writeAnswer(w, what, status, contentType, answer)
}

// abandon ends the call before it was performed: no effect, no answer.
func (h *HTTP) abandon(w http.ResponseWriter, c *Call, gen int, entry *idemEntry) {
	h.mu.Lock()
	if entry != nil && h.idem[c.IdemKey] == entry {
		delete(h.idem, c.IdemKey) // a retry with the key is performed
	}
	c.Performed, c.Replayed, c.Status, c.Answer = false, false, 0, ""
	h.record(gen, c)
	h.mu.Unlock()
	hijackClose(w)
}

// writeAnswer sends the call's answer: a replayed one says so in its header.
func writeAnswer(w http.ResponseWriter, what outcome, status int, contentType, answer string) {
	w.Header().Set("Content-Type", contentType)
	if what == replay {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

// newCall is the call r makes, as the stand-in records it.
func (h *HTTP) newCall(r *http.Request) *Call {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	env := httpEnvelope(r.Method, r.URL.Path, r.URL.Query(), r.Header, body)
	c := &Call{
		External: h.name,
		At:       time.Now(),
		Method:   r.Method,
		Path:     r.URL.Path,
		Header:   r.Header.Clone(),
		Body:     body,
		Key:      expandKey(h.key, env),
	}
	if h.cfg.IdempotencyHeader != "" {
		c.IdemKey = r.Header.Get(h.cfg.IdempotencyHeader)
	}
	return c
}

// latency waits the stand-in's latency before a call is performed; false
// when the stand-in closes first.
func (h *HTTP) latency() bool {
	if h.cfg.Latency <= 0 {
		return true
	}
	t := time.NewTimer(h.cfg.Latency)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.closing:
		return false
	}
}

// lookUp decides by a call's idempotency key whether it is performed or
// answered as the first call with its key was (status and answer, once
// that one is done); entry is the call's own when it is the first with
// its key. h.mu is held.
func (h *HTTP) lookUp(key string, body []byte) (what outcome, entry *idemEntry, status int, answer string) {
	if key == "" {
		return perform, nil, 0, ""
	}
	if e, ok := h.idem[key]; ok {
		switch {
		case !e.done:
			return conflict, nil, 0, ""
		case !sameBody(e.body, body):
			return mismatch, nil, 0, ""
		}
		return replay, nil, e.status, e.answer
	}
	entry = &idemEntry{body: body}
	h.idem[key] = entry
	return perform, entry, 0, ""
}

// respond performs the call's effect when what says so and returns the
// answer it gets, with the fault the stand-in was told to make after
// the effect ("timeout", "500" or none). A replay keeps the first call's
// status and answer. h.mu is held.
func (h *HTTP) respond(c *Call, what outcome, gen int, entry *idemEntry, status int, answer string) (int, string, string, string) {
	contentType := h.cfg.ContentType
	fault := ""
	switch what {
	case perform:
		n := 0
		if gen == h.gen {
			h.performed++
			n = h.performed
			if h.cfg.FailAfterEffect != "" && h.failed < h.cfg.FailTimes {
				h.failed++
				fault = h.cfg.FailAfterEffect
			}
		}
		status = h.cfg.Status
		answer = strings.ReplaceAll(h.cfg.Body, "{seq}", strconv.Itoa(n))
		if entry != nil {
			// The real answer is stored even when a fault loses it,
			// so that a retry with the key replays it.
			entry.done, entry.status, entry.answer = true, status, answer
		}
		c.Performed = true
		switch fault {
		case "timeout":
			status = 0
		case "500":
			status, answer = http.StatusInternalServerError, failAnswer
		}
	case replay:
		c.Replayed = true
	case conflict:
		status, answer, contentType = http.StatusConflict, conflictAnswer, problemType
	case mismatch:
		status, answer, contentType = http.StatusUnprocessableEntity, mismatchAnswer, problemType
	}
	return status, answer, contentType, fault
}

// record keeps c unless a Reset came since the call arrived. h.mu is held.
func (h *HTTP) record(gen int, c *Call) {
	if gen == h.gen {
		h.calls = append(h.calls, c)
	}
}

// hijackClose ends a call with no answer: its connection is closed.
func hijackClose(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// sameBody reports whether two request bodies are the same: byte-equal, or
// both JSON and equal as JSON.
func sameBody(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, ok := decodeJSON(a)
	if !ok {
		return false
	}
	vb, ok := decodeJSON(b)
	return ok && reflect.DeepEqual(va, vb)
}

func decodeJSON(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, false // more after the value
	}
	return v, true
}

// Hold is a call arranged to be held (see HTTP.Hold).
type Hold struct {
	h      *HTTP
	method string
	path   string
	after  bool
	pass   int // matching calls still to let by before the one held; h.mu

	held   chan struct{} // closed when a call reached the hold
	decide chan struct{} // closed by Stop or Cut
	done   chan struct{} // closed when a cut call has ended
	finish func()

	mu      sync.Mutex
	reached bool
	decided bool
	cut     bool
	call    Call
	// client and server are the held call's connection: the caller's
	// address and the stand-in's.
	client, server netip.AddrPort
}

// Hold arranges that the next call whose "METHOD /path" matches (method
// case-insensitive, exact path; path "" matches any path) is held: before
// it is performed (after == false) or after it is performed and recorded,
// before its answer is written (after == true). Any call can be held, one
// that is replayed or refused (409, 422) too; a call takes its hold on
// arrival, and holds are taken in the order they were arranged. A call
// held before it is performed already holds its idempotency key: another
// request with the key meanwhile is answered 409.
func (h *HTTP) Hold(method, path string, after bool) *Hold {
	return h.HoldNth(method, path, 1, after)
}

// HoldNth is Hold for the nth matching call from now (1 the next): the
// n-1 matching calls before it go by. Races use it to hold the second
// of two workers' calls rather than the first.
func (h *HTTP) HoldNth(method, path string, n int, after bool) *Hold {
	hd := &Hold{
		h:      h,
		method: method,
		path:   path,
		after:  after,
		pass:   max(n, 1) - 1,
		held:   make(chan struct{}),
		decide: make(chan struct{}),
		done:   make(chan struct{}),
	}
	var once sync.Once
	hd.finish = func() { once.Do(func() { close(hd.done) }) }
	h.mu.Lock()
	h.holds = append(h.holds, hd)
	h.mu.Unlock()
	return hd
}

// claimHold takes the first hold that matches the call and has no call
// left to let by out of the list; the matching holds before it count the
// call as one let by. h.mu is held.
func (h *HTTP) claimHold(method, path string) *Hold {
	for i, hd := range h.holds {
		if !strings.EqualFold(hd.method, method) || hd.path != "" && hd.path != path {
			continue
		}
		if hd.pass > 0 {
			hd.pass--
			continue
		}
		h.holds = append(h.holds[:i:i], h.holds[i+1:]...)
		return hd
	}
	return nil
}

// wait holds the call c at hd until it is let go (true) or cut, or the
// stand-in closes (false).
func (h *HTTP) wait(hd *Hold, c *Call, r *http.Request) bool {
	h.mu.Lock()
	snap := *c
	h.mu.Unlock()
	client, _ := netip.ParseAddrPort(r.RemoteAddr)
	server, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	hd.mu.Lock()
	hd.call = snap
	hd.client = client
	if a, ok := server.(*net.TCPAddr); ok {
		hd.server = a.AddrPort()
	}
	hd.reached = true
	close(hd.held)
	hd.mu.Unlock()
	select {
	case <-hd.decide:
		hd.mu.Lock()
		defer hd.mu.Unlock()
		return !hd.cut
	case <-h.closing:
		return false
	}
}

// Held is closed when a call reached the hold.
func (hd *Hold) Held() <-chan struct{} { return hd.held }

// Call is the held call (valid after Held is closed). For a hold before,
// it is the call as it arrived; for a hold after, as it was recorded.
func (hd *Hold) Call() Call {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return hd.call
}

// Conn is the held call's connection (valid after Held is closed): the
// caller's address and the stand-in's, for telling which process made
// the call. Either is invalid when the connection was not TCP.
func (hd *Hold) Conn() (client, server netip.AddrPort) {
	hd.mu.Lock()
	defer hd.mu.Unlock()
	return hd.client, hd.server
}

// Cut ends the held call with no answer: its connection is closed. A call
// held before it was performed is then not performed, and is recorded with
// Performed false and Status 0; a call held after has its Status set to 0.
// When the call has reached the hold, Cut returns once the call has ended;
// before that, the next call to reach the hold is cut there. Cut does
// nothing after Stop or a first Cut.
func (hd *Hold) Cut() {
	hd.mu.Lock()
	if hd.decided {
		hd.mu.Unlock()
		return
	}
	hd.decided, hd.cut = true, true
	close(hd.decide)
	reached := hd.reached
	hd.mu.Unlock()
	if reached {
		<-hd.done
	}
}

// Stop removes the hold if no call reached it; if one did and was not cut,
// it goes on normally.
func (hd *Hold) Stop() {
	hd.h.mu.Lock()
	for i, x := range hd.h.holds {
		if x == hd {
			hd.h.holds = append(hd.h.holds[:i:i], hd.h.holds[i+1:]...)
			break
		}
	}
	hd.h.mu.Unlock()
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.decided {
		return
	}
	hd.decided = true
	close(hd.decide)
}
