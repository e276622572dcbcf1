// Command allfives-go is the Go example client of allfives, shaped like a backend
// calling the engine: it plays whole matches against the server's bots (two players;
// four in partnerships, two of them human), checking every answer against the API's
// promises and the final score sheet; provokes refusals on purpose and checks each
// one's code, reason and details; plays matches on a turn clock (a claim too early
// refused, a timeout claimed once due, a seat that leaves and comes back); and, on a
// server with a match store, plays a match between two devices (goroutines with a
// connection each) that learn every move from their own Watch streams. Any broken
// promise exits 1 with a sentence saying which.
//
//	allfives-go --addr 127.0.0.1:50051 [--store-addr 127.0.0.1:50052]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"example.com/allfives/goclient/engine"
	allfivesv1 "example.com/allfives/goclient/gen/allfives/v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "a server on the production defaults (no client seeds, no match store)")
	storeAddr := flag.String("store-addr", "", "a server with a match store (--match-store memory), for the two devices; empty: not played")
	timeout := flag.Duration("timeout", 5*time.Second, "the deadline of each attempt of each call")
	total := flag.Duration("total", 90*time.Second, "the deadline of the whole run")
	target := flag.Uint("device-target", 200, "the two devices' match is played to this score")
	pause := flag.Duration("device-pause", 20*time.Millisecond, "each device thinks this long before each move")
	minWatches := flag.Int("min-watches", 1, "the first hand is dealt once each device has watched this many times (2 where connections age every second)")
	quiet := flag.Bool("quiet", false, "print only each part's result")
	flag.Parse()

	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	detail := say
	if *quiet {
		detail = func(string, ...any) {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *total)
	defer cancel()
	if err := run(ctx, *addr, *storeAddr, *timeout, uint32(*target), *pause, *minWatches, say, detail); err != nil {
		cancel()
		fmt.Fprintf(os.Stderr, "allfives-go: FAILED: %v\n", err)
		if e := engine.FromError("", err); e.Code != 0 && e.Method != "" {
			fmt.Fprintf(os.Stderr, "allfives-go: %s\n", e.Sentence())
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, storeAddr string, timeout time.Duration, target uint32, pause time.Duration, minWatches int,
	say, detail func(string, ...any)) error {
	c, err := engine.Dial(addr, timeout, engine.DefaultRetry)
	if err != nil {
		return err
	}
	defer c.Close()
	r := &refusals{seen: map[allfivesv1.ErrorReason]int{}, say: detail}
	started := time.Now()

	// Two players: a human against the server's MEDIUM bot, to the default target.
	t, err := newTable(ctx, c, "2 players, a human against the MEDIUM bot", &allfivesv1.Rules{Players: 2},
		[]allfivesv1.BotLevel{allfivesv1.BotLevel_BOT_LEVEL_UNSPECIFIED, allfivesv1.BotLevel_BOT_LEVEL_MEDIUM})
	if err != nil {
		return err
	}
	if err := playToTheEnd(ctx, t, say); err != nil {
		return err
	}
	if err := r.beforeDeal(ctx, c); err != nil {
		return err
	}

	// Four players in partnerships: seats 0 and 2 human (hot seat), 1 and 3 the EASY and
	// HARD bots; the refusals of a hand in play on the human turns.
	t, err = newTable(ctx, c, "4 players in partnerships, two humans against the EASY and HARD bots",
		&allfivesv1.Rules{Players: 4, Partnership: true, Target: 150, Settlement: allfivesv1.SettlementRule_SETTLEMENT_RULE_WINNER_TAKES_PIPS},
		[]allfivesv1.BotLevel{allfivesv1.BotLevel_BOT_LEVEL_UNSPECIFIED, allfivesv1.BotLevel_BOT_LEVEL_EASY,
			allfivesv1.BotLevel_BOT_LEVEL_UNSPECIFIED, allfivesv1.BotLevel_BOT_LEVEL_HARD})
	if err != nil {
		return err
	}
	during := r.duringPlay()
	t.onTurn = during.onTurn
	if err := playToTheEnd(ctx, t, say); err != nil {
		return err
	}
	for _, name := range []string{"no credential", "partner's credential", "bot's seat", "out of turn", "pip over 6", "not in hand", "draw holding a playable tile"} {
		if _, left := during.left[name]; left {
			return fmt.Errorf("the refusal %q was never provoked in %d human turns", name, t.turns)
		}
	}
	for name := range during.left {
		say("(no turn of this match allowed the refusal %q)", name)
	}
	if err := r.afterMatch(ctx, t); err != nil {
		return err
	}
	line, err := r.turnClocks(ctx, c)
	if err != nil {
		return err
	}
	say("turn clocks: %s", line)
	say("%d refusals checked on the production defaults: %s", len(r.seen), joinNames(r.reasons()))

	if storeAddr != "" {
		store, err := engine.Dial(storeAddr, timeout, engine.DefaultRetry)
		if err != nil {
			return err
		}
		defer store.Close()
		before := len(r.seen)
		if err := r.storeRefusals(ctx, store); err != nil {
			return err
		}
		say("match store: a keyed claim and a deal answered again when repeated; %d more refusals", len(r.seen)-before)
		line, err := twoDevices(ctx, storeAddr, timeout, target, pause, minWatches, detail)
		if err != nil {
			return err
		}
		say("two devices through the match store and Watch: %s", line)
	}
	say("all checks passed: %d different refusals (%s), %d calls, %d retries, %.1f s",
		len(r.seen), joinNames(r.reasons()), c.Calls(), c.Retries(), time.Since(started).Seconds())
	return nil
}

// playToTheEnd plays t's match to PHASE_OVER and checks its end.
func playToTheEnd(ctx context.Context, t *table, say func(string, ...any)) error {
	if err := t.play(ctx); err != nil {
		return err
	}
	line, err := t.finish(ctx)
	if err != nil {
		return err
	}
	say("%s: %s", t.name, line)
	return nil
}
