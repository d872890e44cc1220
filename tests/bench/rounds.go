package main

import (
	"fmt"
	"strings"
)

// sideRounds is how many times section 8 measures each contender in a configuration. One run of a burst
// varies by a fifth on this machine, and the two contenders run one after the other, so a drift of the
// machine between them reads as a difference between them. The second round runs them in the reverse
// order (the peer first), so a steady drift weighs on both alike; the rates reported are the means.
const sideRounds = 2

// addRound folds another run of the same contender and configuration into r: its rates join the mean;
// everything else stays the first run's. A run that did not end every request is said in the note.
func (r *contenderRun) addRound(again contenderRun) {
	if len(r.Rounds) == 0 {
		r.Rounds, r.DelRounds = []float64{r.Rate}, []float64{r.DelRate}
	}
	r.Rounds, r.DelRounds = append(r.Rounds, again.Rate), append(r.DelRounds, again.DelRate)
	r.Rate, r.DelRate = meanOf(r.Rounds), meanOf(r.DelRounds)
	if again.Fulfilled != r.Fulfilled || again.Deleted != r.Deleted || again.Note != "" {
		r.Note = strings.TrimPrefix(r.Note+fmt.Sprintf("; round %d: %d fulfilled, %d deleted %s",
			len(r.Rounds), again.Fulfilled, again.Deleted, again.Note), "; ")
	}
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// roundsOf is each round's rate, for the report: "(19.5, 20.3)", or nothing for a single round.
func roundsOf(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.1f", x)
	}
	return " (" + strings.Join(s, ", ") + ")"
}
