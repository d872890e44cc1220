package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A second round joins the rates' mean and keeps each round for the report; a round that did not end
// every request says so in the note, and the rest stays the first round's.
func TestAddRoundAveragesTheRatesAndNotesAnIncompleteRound(t *testing.T) {
	r := contenderRun{Fulfilled: 10, Deleted: 10, Rate: 20, DelRate: 60, EventsDue: 40}
	r.addRound(contenderRun{Fulfilled: 10, Deleted: 10, Rate: 10, DelRate: 80, EventsDue: 1})
	assert.InDelta(t, 15, r.Rate, 1e-9)
	assert.InDelta(t, 70, r.DelRate, 1e-9)
	assert.Equal(t, []float64{20, 10}, r.Rounds)
	assert.Equal(t, " (60.0, 80.0)", roundsOf(r.DelRounds))
	assert.InDelta(t, 40, r.EventsDue, 1e-9, "the first round's figures were replaced")
	assert.Empty(t, r.Note)

	r.addRound(contenderRun{Fulfilled: 9, Deleted: 9, Rate: 15, DelRate: 70, Note: "1 left"})
	assert.InDelta(t, 15, r.Rate, 1e-9)
	assert.Contains(t, r.Note, "round 3: 9 fulfilled, 9 deleted 1 left")
	assert.Empty(t, roundsOf([]float64{3}), "a single round has nothing to show")
}
