// Package ranking verifies allfives match results (GameView.result, a compact JWS the
// service signs with Ed25519) with go-jose v4 against the service's published key set,
// and refuses a match it has taken already. It verifies only: no Go rating library
// is at hand here, so rate the claims with the library of your choice (the Python
// example, ../python/ranking.py, rates with openskill). What a result proves:
// docs/security.md, "Signed results".
//
//	keys := ranking.NewKeys("https://allfives.example/.well-known/jwks.json", nil)
//	v := ranking.Verifier{Keys: keys, Issuer: "https://allfives.example"}
//	taken := ranking.NewTaken()
//	res, err := v.Verify(token)           // a *Refused says why
//	if err == nil { err = taken.Take(res) } // a replay is refused
package ranking

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// ResultType is the `typ` of every result; no other token the keys sign is of it.
const ResultType = "allfives-result+jwt"

// Leeway is how far the service's clock and the verifier's may disagree: a result
// signed a second ago by a clock ahead of the verifier's would otherwise be issued in
// the future. It applies to iat and exp alike.
const Leeway = time.Minute

// Refused is a result not taken. Why is one word: signature, unknown-key, algorithm,
// type, issuer, expired, claims, unrecorded, anonymous or replay.
type Refused struct {
	Why string
	Err error
}

func (r *Refused) Error() string { return r.Why + ": " + r.Err.Error() }

func refuse(why string, err error) error { return &Refused{Why: why, Err: err} }

// Seat is one seat of a result: a human's display name and the studio's player id its
// signed pass named (Player; empty when its player showed none), or a bot's level.
type Seat struct {
	Seat   int    `json:"seat"`
	Side   int    `json:"side"`
	Name   string `json:"name,omitempty"`
	Player string `json:"player,omitempty"`
	Bot    string `json:"bot,omitempty"`
	Ended  string `json:"ended,omitempty"`
}

// Result is the claims a ranking reads (the proto's GameView.result comment lists
// them all). Pointers are claims that must be present.
type Result struct {
	ID       string `json:"jti"`
	Expiry   int64  `json:"exp"`
	State    string `json:"state"`
	Recorded *bool  `json:"recorded"`
	Rules    struct {
		Players     int    `json:"players"`
		Partnership bool   `json:"partnership"`
		Target      int    `json:"target"`
		HandSize    string `json:"hand_size"`
		Settlement  string `json:"settlement"`
	} `json:"rules"`
	Seats  []Seat `json:"seats"`
	Scores []int  `json:"scores"`
	Winner *int   `json:"winner"`
}

// Keys is the service's key set, fetched over HTTP and kept an hour (the service's
// Cache-Control max-age); a kid not in it fetches the set again, at most every 30 s,
// which is how a key the service rotated to is learnt.
type Keys struct {
	URL     string
	client  *http.Client
	mu      sync.Mutex
	set     jose.JSONWebKeySet
	fetched time.Time
}

// NewKeys reads the set at url (GET /.well-known/jwks.json on the service's API port)
// with client (nil: a client with a 10 s timeout).
func NewKeys(url string, client *http.Client) *Keys {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Keys{URL: url, client: client}
}

const (
	keysLifetime = time.Hour
	keysCooldown = 30 * time.Second
)

// Lookup answers the Ed25519 public key published under kid.
func (k *Keys) Lookup(kid string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	age := time.Since(k.fetched)
	if k.fetched.IsZero() || age > keysLifetime {
		if err := k.fetch(); err != nil {
			return nil, err
		}
	}
	found := k.set.Key(kid)
	if len(found) == 0 && time.Since(k.fetched) > keysCooldown {
		if err := k.fetch(); err != nil {
			return nil, err
		}
		found = k.set.Key(kid)
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("no key %q in the set", kid)
	}
	key, ok := found[0].Key.(ed25519.PublicKey)
	if !ok || found[0].Algorithm != string(jose.EdDSA) {
		return nil, fmt.Errorf("key %q is not an EdDSA public key", kid)
	}
	return key, nil
}

func (k *Keys) fetch() error {
	resp, err := k.client.Get(k.URL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", k.URL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return fmt.Errorf("the key set at %s: %w", k.URL, err)
	}
	k.set, k.fetched = set, time.Now()
	return nil
}

// Verifier checks a result's signature, header and claims. It changes nothing.
type Verifier struct {
	Keys *Keys
	// Issuer is the service's --result-issuer; required.
	Issuer string
	// AllowUnrecorded takes results of matches played without a match store, where
	// whoever holds an older token can play on to another ending, signed just the
	// same, and send the ending they like best (only the first to arrive is taken, by
	// jti). Not for a ranked mode (docs/security.md).
	AllowUnrecorded bool
	// AllowAnonymous takes results with a human seat whose player showed no pass (no
	// Player: only the display name its player typed, which anyone can type). Not for
	// a ranked mode, whose service requires passes (--pass-required; docs/security.md,
	// "Player passes").
	AllowAnonymous bool
	// Now is the clock exp is judged by (nil: time.Now).
	Now func() time.Time
}

// Verify answers the result's claims once its signature, header and claims hold.
func (v *Verifier) Verify(token string) (*Result, error) {
	if v.Issuer == "" { // go-jose would then take any iss
		return nil, errors.New("ranking: Verifier.Issuer is empty")
	}
	// EdDSA only, whatever the header says: no "none", no HS256.
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			return nil, refuse("algorithm", err)
		}
		return nil, refuse("claims", err)
	}
	if len(tok.Headers) != 1 {
		return nil, refuse("claims", errors.New("not one signature"))
	}
	header := tok.Headers[0]
	// The key the header's kid names, from the published set only.
	key, err := v.Keys.Lookup(header.KeyID)
	if err != nil {
		return nil, refuse("unknown-key", err)
	}
	var std jwt.Claims
	var res Result
	if err := tok.Claims(key, &std, &res); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return nil, refuse("signature", err)
		}
		return nil, refuse("claims", err)
	}
	// The header was signed with the claims: now its type can be believed.
	if typ, _ := header.ExtraHeaders[jose.HeaderType].(string); typ != ResultType {
		return nil, refuse("type", fmt.Errorf("typ %q", typ))
	}
	// go-jose checks exp and iat only when present: require them, and ours.
	if std.Expiry == nil || std.IssuedAt == nil || std.ID == "" || res.State == "" ||
		res.Recorded == nil || res.Winner == nil || len(res.Scores) < 2 ||
		*res.Winner < 0 || *res.Winner >= len(res.Scores) || len(res.Seats) < 2 {
		return nil, refuse("claims", errors.New("a claim is missing or malformed"))
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.Issuer, Time: now}, Leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return nil, refuse("issuer", err)
		case errors.Is(err, jwt.ErrExpired):
			return nil, refuse("expired", err)
		}
		return nil, refuse("claims", err)
	}
	if !*res.Recorded && !v.AllowUnrecorded {
		return nil, refuse("unrecorded", errors.New("played without a match store"))
	}
	if !v.AllowAnonymous {
		for _, s := range res.Seats {
			if s.Bot == "" && s.Player == "" {
				return nil, refuse("anonymous", fmt.Errorf("seat %d has no player id: its "+
					"player showed no pass (a ranked deployment requires them)", s.Seat))
			}
		}
	}
	return &res, nil
}

// Taken is the match ids taken, in memory: enough for an example. A ranking server
// keeps them where it keeps its ratings, taken in the same transaction (a UNIQUE
// column, as ../python/ranking.py does), so a crash cannot take a result twice or
// lose one.
type Taken struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// NewTaken is an empty set.
func NewTaken() *Taken { return &Taken{ids: map[string]struct{}{}} }

// Take records the result's match id, or refuses it as a replay.
func (t *Taken) Take(res *Result) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.ids[res.ID]; ok {
		return refuse("replay", fmt.Errorf("match %s was taken already", res.ID))
	}
	t.ids[res.ID] = struct{}{}
	return nil
}
