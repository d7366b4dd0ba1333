package admission

import (
	"testing"
	"time"
)

// interval is what one interval of a run shows the controller.
type interval struct {
	inFlight int             // rounds in flight when the relay asks
	handoffs []time.Duration // hand-off latencies
	refused  int             // hand-offs Temporal refused
	rounds   []time.Duration // rounds started, with their latencies
}

// play feeds the intervals to a controller and returns the window after
// each.
func play(c *Controller, intervals ...interval) []int {
	now := c.lastTick
	if now.IsZero() {
		now = time.Unix(0, 0)
	}
	var out []int
	for _, iv := range intervals {
		c.Free(iv.inFlight)
		for _, d := range iv.handoffs {
			c.Handoff(d, false)
		}
		for i := 0; i < iv.refused; i++ {
			c.Handoff(0, true)
		}
		c.Started(iv.rounds...)
		now = now.Add(time.Second)
		c.Tick(now)
		out = append(out, c.Window())
	}
	return out
}

// slowOneIn is n hand-offs of 10 ms but one of 900 ms.
func slowOneIn(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = ms(10)
	}
	out[0] = ms(900)
	return out
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func repeat(iv interval, n int) []interval {
	out := make([]interval, n)
	for i := range out {
		out[i] = iv
	}
	return out
}

func TestWindow(t *testing.T) {
	healthy := interval{inFlight: 1 << 30, handoffs: []time.Duration{ms(10), ms(20), ms(30)}, rounds: []time.Duration{ms(300), ms(400), ms(500)}}
	cases := []struct {
		name      string
		intervals []interval
		want      []int
	}{
		{"grows by half an interval while full and healthy", repeat(healthy, 3), []int{24, 36, 54}},
		{"does not grow while unused", repeat(interval{inFlight: 2, handoffs: []time.Duration{ms(10)}}, 3), []int{16, 16, 16}},
		{"shrinks to 70% when Temporal refuses", []interval{{inFlight: 16, refused: 1}}, []int{11}},
		{"shrinks when the slowest hand-offs pass a quarter second",
			[]interval{{inFlight: 16, handoffs: []time.Duration{ms(10), ms(10), ms(10), ms(10), ms(10), ms(10), ms(10), ms(10), ms(900), ms(900)}}}, []int{11}},
		{"one slow hand-off in twenty is not congestion",
			[]interval{{inFlight: 16, handoffs: slowOneIn(20)}}, []int{24}},
		{"cuts at most every three intervals", repeat(interval{inFlight: 100, refused: 1}, 4), []int{11, 11, 11, 7}},
		{"grows by 5% after the first congestion",
			append([]interval{{inFlight: 16, refused: 1}}, repeat(healthy, 3)...), []int{11, 12, 13, 14}},
		{"shrinks when rounds start far slower than the baseline",
			append(repeat(healthy, 2), interval{inFlight: 1 << 30, rounds: []time.Duration{ms(4000), ms(5000), ms(6000)}}), []int{24, 36, 25}},
		{"a slower round within the slack is not congestion",
			append(repeat(healthy, 2), interval{inFlight: 1 << 30, rounds: []time.Duration{ms(1500), ms(2000), ms(2500)}}), []int{24, 36, 54}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := play(New(Config{}), c.intervals...)
			if len(got) != len(c.want) {
				t.Fatalf("windows %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("windows %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestWindowStaysWithinBounds(t *testing.T) {
	c := New(Config{Initial: 8, Min: 4, Max: 20})
	for _, w := range play(c, repeat(interval{inFlight: 100, refused: 1}, 30)...) {
		if w < 4 {
			t.Fatalf("window %d below the minimum 4", w)
		}
	}
	if w := c.Window(); w != 4 {
		t.Errorf("window after a long congestion = %d, want the minimum 4", w)
	}
	healthy := interval{inFlight: 1 << 30, handoffs: []time.Duration{ms(10)}}
	for _, w := range play(c, repeat(healthy, 100)...) {
		if w > 20 {
			t.Fatalf("window %d above the maximum 20", w)
		}
	}
	if w := c.Window(); w != 20 {
		t.Errorf("window after a long healthy stretch = %d, want the maximum 20", w)
	}
}

func TestFreeIsWhatTheWindowLeaves(t *testing.T) {
	c := New(Config{})
	for _, tc := range []struct{ inFlight, want int }{{0, 16}, {10, 6}, {16, 0}, {40, 0}} {
		if got := c.Free(tc.inFlight); got != tc.want {
			t.Errorf("Free(%d) = %d, want %d", tc.inFlight, got, tc.want)
		}
	}
}

func TestTickMovesOncePerInterval(t *testing.T) {
	c := New(Config{})
	now := time.Unix(100, 0)
	if !c.Tick(now) {
		t.Fatal("the first tick must move")
	}
	if c.Tick(now.Add(500 * time.Millisecond)) {
		t.Error("a tick within the interval moved the window")
	}
	if !c.Tick(now.Add(time.Second)) {
		t.Error("a tick an interval later did not move the window")
	}
}

func TestSnapshotNamesTheCongestion(t *testing.T) {
	c := New(Config{})
	play(c, interval{inFlight: 16, refused: 2})
	if got := c.Last(); got.Congested != "temporal-refused" || got.Window != 11 {
		t.Errorf("snapshot %+v", got)
	}
	play(c, interval{inFlight: 16, handoffs: []time.Duration{ms(500)}})
	if got := c.Last(); got.Congested != "handoff-latency" || got.HandoffP90 != ms(500) {
		t.Errorf("snapshot %+v", got)
	}
}

func TestPercentile(t *testing.T) {
	cases := []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 90, 0},
		{[]time.Duration{ms(5)}, 90, ms(5)},
		{[]time.Duration{ms(3), ms(1), ms(2)}, 50, ms(2)},
		{slowOneIn(10), 90, ms(10)},
		{slowOneIn(5), 90, ms(900)},
	}
	for _, c := range cases {
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("percentile(%v, %d) = %v, want %v", c.in, c.p, got, c.want)
		}
	}
}
