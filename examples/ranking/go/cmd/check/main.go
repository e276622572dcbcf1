// Command check runs the ranking package on what ../python/driver.py wrote, against
// the real server's key set (.ci/ranking runs it): every genuine result verifies with
// the claims of its match and is taken; each submitted again is refused as a replay,
// and so is every stateless match's second branch; with the clock a second past its
// exp (and the leeway) each is refused as expired, a second before it taken; a verifier on its defaults refuses exactly the
// stateless ones (unrecorded), and one taking unrecorded results refuses exactly those
// whose players showed no pass (anonymous); every human seat's Player is the id the
// driver's pass named for it; every forgery is refused by the defence it was made to meet (each
// against an empty set of taken ids, so no other check hides a missing one).
//
//	go run ./cmd/check --jwks-url URL --corpus corpus.json
//
// Prints 'ranking-go: N passed, N failed' and exits 1 on any failure.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"time"

	"example.com/allfives/ranking"
)

type expect struct {
	JTI         string              `json:"jti"`
	State       string              `json:"state"`
	Recorded    bool                `json:"recorded"`
	Players     int                 `json:"players"`
	Partnership bool                `json:"partnership"`
	Target      int                 `json:"target"`
	Scores      []int               `json:"scores"`
	Winner      int                 `json:"winner"`
	Seats       []map[string]string `json:"seats"`
}

type corpus struct {
	Issuer  string `json:"issuer"`
	Genuine []struct {
		Result string `json:"result"`
		Expect expect `json:"expect"`
	} `json:"genuine"`
	Branches []struct {
		Result string `json:"result"`
		JTI    string `json:"jti"`
	} `json:"branches"`
	Mutations []struct {
		Name      string `json:"name"`
		RefusedBy string `json:"refused_by"`
		Result    string `json:"result"`
	} `json:"mutations"`
}

var passed, failed int

func check(ok bool, format string, args ...any) {
	if ok {
		passed++
		return
	}
	failed++
	fmt.Printf("FAILED: "+format+"\n", args...)
}

// verdict is "taken", or the word of the refusal.
func verdict(err error) string {
	if err == nil {
		return "taken"
	}
	var refused *ranking.Refused
	if errors.As(err, &refused) {
		return refused.Why
	}
	return "error: " + err.Error()
}

func take(v *ranking.Verifier, taken *ranking.Taken, token string) (*ranking.Result, error) {
	res, err := v.Verify(token)
	if err == nil {
		err = taken.Take(res)
	}
	return res, err
}

func matches(res *ranking.Result, e expect) bool {
	seats := make([]map[string]string, len(res.Seats))
	for i, s := range res.Seats {
		if s.Bot != "" {
			seats[i] = map[string]string{"bot": s.Bot}
		} else {
			seats[i] = map[string]string{"name": s.Name}
			if s.Player != "" {
				seats[i]["player"] = s.Player
			}
		}
	}
	return res.ID == e.JTI && res.State == e.State && *res.Recorded == e.Recorded &&
		res.Rules.Players == e.Players && res.Rules.Partnership == e.Partnership &&
		res.Rules.Target == e.Target && reflect.DeepEqual(res.Scores, e.Scores) &&
		*res.Winner == e.Winner && reflect.DeepEqual(seats, e.Seats)
}

func main() {
	jwksURL := flag.String("jwks-url", "", "the service's /.well-known/jwks.json")
	path := flag.String("corpus", "", "driver.py's output")
	flag.Parse()
	raw, err := os.ReadFile(*path)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	var c corpus
	if err := json.Unmarshal(raw, &c); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	keys := ranking.NewKeys(*jwksURL, nil)
	// The stateless matches' results are taken too (their second branches refused), and
	// they name no player (that server takes no passes).
	v := &ranking.Verifier{Keys: keys, Issuer: c.Issuer, AllowUnrecorded: true, AllowAnonymous: true}
	taken := ranking.NewTaken()

	for _, g := range c.Genuine {
		res, err := take(v, taken, g.Result)
		check(err == nil, "genuine result of %s: %s", g.Expect.JTI, verdict(err))
		if err == nil {
			check(matches(res, g.Expect), "the claims of %s are not its final view's", g.Expect.JTI)
		}
	}
	for _, g := range c.Genuine {
		_, err := take(v, taken, g.Result)
		check(verdict(err) == "replay", "a second submission of %s: %s", g.Expect.JTI, verdict(err))
	}
	for _, b := range c.Branches {
		_, err := take(v, taken, b.Result)
		check(verdict(err) == "replay", "a second branch of %s: %s", b.JTI, verdict(err))
	}
	// On its defaults: exactly the stateless matches' results refused, as unrecorded.
	strict := &ranking.Verifier{Keys: keys, Issuer: c.Issuer}
	for _, g := range c.Genuine {
		_, err := strict.Verify(g.Result)
		want := "taken"
		if !g.Expect.Recorded {
			want = "unrecorded"
		}
		check(verdict(err) == want, "by default, %s: %s, want %s", g.Expect.JTI, verdict(err), want)
	}
	// Taking unrecorded results but not anonymous ones: exactly the results with a human
	// seat claimed without a pass refused, as anonymous.
	ranked := &ranking.Verifier{Keys: keys, Issuer: c.Issuer, AllowUnrecorded: true}
	anonymous, example := 0, ""
	for _, g := range c.Genuine {
		_, err := ranked.Verify(g.Result)
		want := "taken"
		for _, s := range g.Expect.Seats {
			if s["bot"] == "" && s["player"] == "" {
				want = "anonymous"
			}
		}
		if verdict(err) == "anonymous" {
			anonymous++
			example = err.Error()
		}
		check(verdict(err) == want, "without passes, %s: %s, want %s", g.Expect.JTI, verdict(err), want)
	}
	if example != "" {
		example = ", e.g. " + example
	}
	fmt.Printf("ranking-go: %d results without passes refused%s\n", anonymous, example)
	// The clock injected: a second past its exp and the leeway, every real result is
	// refused; a second before, taken.
	for _, g := range c.Genuine {
		res, err := v.Verify(g.Result)
		if err != nil {
			check(false, "%s: %s", g.Expect.JTI, verdict(err))
			continue
		}
		deadline := time.Unix(res.Expiry, 0).Add(ranking.Leeway)
		at := func(t time.Time) string {
			v := &ranking.Verifier{Keys: keys, Issuer: c.Issuer, AllowUnrecorded: true, AllowAnonymous: true,
				Now: func() time.Time { return t }}
			_, err := v.Verify(g.Result)
			return verdict(err)
		}
		got := at(deadline.Add(time.Second))
		check(got == "expired", "%s a second past its exp and the leeway: %s", res.ID, got)
		got = at(deadline.Add(-time.Second))
		check(got == "taken", "%s a second before its exp and the leeway: %s", res.ID, got)
	}

	type outcome struct{ name, want, got string }
	counts := map[outcome]int{}
	for _, m := range c.Mutations {
		_, err := take(v, ranking.NewTaken(), m.Result)
		check(verdict(err) == m.RefusedBy, "%s: %s, want %s", m.Name, verdict(err), m.RefusedBy)
		counts[outcome{m.Name, m.RefusedBy, verdict(err)}]++
	}
	lines := []string{}
	for o, n := range counts {
		how := "refused by " + o.want
		if o.got != o.want {
			how = o.got + ", NOT refused by " + o.want
		}
		lines = append(lines, fmt.Sprintf("ranking-go: %s: %d %s", o.name, n, how))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Printf("ranking-go: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
