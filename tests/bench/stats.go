package bench

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Summary describes a set of samples.
type Summary struct {
	N                               int
	Min, P25, Median, P75, P90, Max float64
}

// Summarize returns the summary of xs (zero for no samples). The median of an even count is
// the mean of the two middle values; P25, P75 and P90 are nearest-rank percentiles.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return Summary{N: len(s), Min: s[0], P25: nearestRank(s, 25), Median: median(s), P75: nearestRank(s, 75),
		P90: nearestRank(s, 90), Max: s[len(s)-1]}
}

// Spread renders where the samples lie around the median: "IQR p25–p75, range min–max" (""
// for fewer than two samples).
func (s Summary) Spread() string {
	if s.N < 2 {
		return ""
	}
	return fmt.Sprintf("IQR %s–%s, range %s–%s", FormatValue(s.P25), FormatValue(s.P75), FormatValue(s.Min), FormatValue(s.Max))
}

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 { return Summarize(xs).Median }

// Percentile returns the nearest-rank p-th percentile of xs (0 < p ≤ 100; 0 for no samples).
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return nearestRank(s, p)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func nearestRank(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Seconds converts durations to seconds.
func Seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// Millis converts durations to milliseconds.
func Millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}
