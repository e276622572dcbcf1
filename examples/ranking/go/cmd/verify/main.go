// Command verify checks results as a studio's ranking server would: one result (a
// compact JWS) a line on standard input, each verified against the service's key set
// and refused if its match was taken already in this run (the ranking package keeps
// the ids in memory). Prints a line a result.
//
//	go run ./cmd/verify --server https://allfives.example --issuer https://allfives.example < results.txt
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"example.com/allfives/ranking"
)

func main() {
	server := flag.String("server", "", "the service's base URL (its API port)")
	issuer := flag.String("issuer", "", "its --result-issuer")
	allowUnrecorded := flag.Bool("allow-unrecorded", false,
		"take results of matches played without a match store")
	allowAnonymous := flag.Bool("allow-anonymous", false,
		"take results with a human seat whose player showed no pass (no player id)")
	flag.Parse()
	if *server == "" || *issuer == "" {
		fmt.Fprintln(os.Stderr, "verify: --server and --issuer are needed")
		os.Exit(2)
	}
	v := ranking.Verifier{
		Keys:            ranking.NewKeys(strings.TrimRight(*server, "/")+"/.well-known/jwks.json", nil),
		Issuer:          *issuer,
		AllowUnrecorded: *allowUnrecorded,
		AllowAnonymous:  *allowAnonymous,
	}
	taken := ranking.NewTaken()
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 64<<10), 64<<10)
	var nTaken, nRefused int
	for lines.Scan() {
		token := strings.TrimSpace(lines.Text())
		if token == "" {
			continue
		}
		res, err := v.Verify(token)
		if err == nil {
			err = taken.Take(res)
		}
		var refused *ranking.Refused
		switch {
		case err == nil:
			nTaken++
			fmt.Printf("taken: match %s, scores %v, side %d won\n", res.ID, res.Scores, *res.Winner)
		case errors.As(err, &refused):
			nRefused++
			fmt.Printf("refused: %v\n", err)
		default:
			fmt.Fprintln(os.Stderr, "verify:", err)
			os.Exit(1)
		}
	}
	if err := lines.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "verify:", err)
		os.Exit(1)
	}
	fmt.Printf("%d taken, %d refused\n", nTaken, nRefused)
}
