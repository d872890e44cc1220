package quote

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTruncateCutsBetweenRunes(t *testing.T) {
	assert.Equal(t, "abcdef", Truncate("abcdef", 6))
	assert.Equal(t, "abc…", Truncate("abcdef", 4))
	assert.Equal(t, "東京…", Truncate("東京都庁舎", 3))
	assert.Equal(t, "東京都", Truncate("東京都", 3), "three runes are within three, though nine bytes")
	assert.Equal(t, "…", Truncate("ab", 1))
	assert.Equal(t, "abc", Truncate("abc", 0), "no bound")
	assert.Equal(t, strings.Repeat("ü", 59)+"…", Truncate(strings.Repeat("ü", 70), 60))
	for n := 1; n < 12; n++ {
		got := Truncate("añb東c😀dé", n)
		assert.True(t, utf8.ValidString(got), "%d: %q", n, got)
		assert.LessOrEqual(t, utf8.RuneCountInString(got), n)
	}
}
