package main

import "testing"

func TestPortOf(t *testing.T) {
	for addr, want := range map[string]int{":8000": 8000, "127.0.0.1:8123": 8123, "[::1]:9": 9, "localhost": 0, ":0": 0, "": 0, ":http": 0} {
		if got := portOf(addr); got != want {
			t.Errorf("portOf(%q) = %d, want %d", addr, got, want)
		}
	}
}
