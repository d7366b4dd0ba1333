package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

type list = resource.List[resource.Resource]

// walk reads a list to its end through continuation tokens, starting at
// first (a list path with its query) and returning every page.
func (e *env) walk(first string) []list {
	e.t.Helper()
	var pages []list
	path := first
	for {
		var l list
		e.do("GET", path, nil).expect(200).into(&l)
		pages = append(pages, l)
		if l.NextPageToken == "" {
			return pages
		}
		if len(pages) > 1000 {
			e.t.Fatalf("%s: more than 1,000 pages", first)
		}
		sep := "?"
		if strings.Contains(first, "?") {
			sep = "&"
		}
		path = first + sep + "pageToken=" + urlQuery(l.NextPageToken)
	}
}

func names(pages []list) []string {
	var out []string
	for _, p := range pages {
		for _, r := range p.Items {
			out = append(out, r.Name)
		}
	}
	return out
}

// The contract: "a continuation token reads the page after the one that
// returned it, in the same order, and is refused for any other query";
// page numbers keep working and read the same items.
func TestPageTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for i := range 7 {
			c := e.createCluster(fmt.Sprintf("cl-%d", i))
			if i%2 == 0 {
				e.do("PATCH", c.Href, map[string]any{"labels": map[string]string{"tier": "gold"}}).expect(200)
			}
		}
		for _, query := range []string{
			"size=3",
			"size=3&orderBy=name&order=asc",
			"size=2&order=" + urlQuery("generation desc, name asc"),
			"size=2&search=" + urlQuery("labels.tier='gold'"),
			"size=1&order=" + urlQuery("deleted_time asc"),
			"size=2&order=" + urlQuery("deleted_time desc"),
		} {
			pages := e.walk(base + "/clusters?" + query)
			var byNumber []list
			for n := 1; n <= len(pages); n++ {
				var l list
				e.do("GET", fmt.Sprintf("%s/clusters?%s&page=%d", base, query, n), nil).expect(200).into(&l)
				byNumber = append(byNumber, l)
			}
			if got, want := strings.Join(names(pages), " "), strings.Join(names(byNumber), " "); got != want || got == "" {
				t.Errorf("%s: token pages read %q, page numbers %q", query, got, want)
			}
			for i, p := range pages {
				if p.Page != i+1 || p.Total != byNumber[0].Total || p.Size != len(p.Items) {
					t.Errorf("%s: page %d says page %d, size %d (%d items), total %d (want %d)", query, i+1, p.Page, p.Size, len(p.Items), p.Total, byNumber[0].Total)
				}
			}
			if last := byNumber[len(byNumber)-1]; last.NextPageToken != "" {
				t.Errorf("%s: the last page offers a token", query)
			}
			if int64(len(names(pages))) != pages[0].Total {
				t.Errorf("%s: %d items over the pages, total %d", query, len(names(pages)), pages[0].Total)
			}
		}

		// Past the last match, a search still reports its total.
		var past list
		e.do("GET", base+"/clusters?size=2&page=99&search="+urlQuery("labels.tier='gold'"), nil).expect(200).into(&past)
		if len(past.Items) != 0 || past.Total != 4 {
			t.Errorf("page 99 of a search: %d items, total %d; want none of 4", len(past.Items), past.Total)
		}

		var first list
		e.do("GET", base+"/clusters?size=2", nil).expect(200).into(&first)
		token := urlQuery(first.NextPageToken)
		for _, bad := range []struct{ query, field string }{
			{"size=2&orderBy=name&pageToken=" + token, "pageToken"},                           // another order
			{"size=2&search=" + urlQuery("name='cl-1'") + "&pageToken=" + token, "pageToken"}, // another search
			{"size=2&page=2&pageToken=" + token, "page"},
			{"pageToken=not-a-token", "pageToken"},
			{"pageToken=" + strings.Repeat("A", 5000), "pageToken"},
			{"pageToken=eyJ2Ijo5fQ", "pageToken"}, // {"v":9}
		} {
			p := e.do("GET", base+"/clusters?"+bad.query, nil).problem(400, "HYPERFLEET-VAL-003")
			if !p.names(bad.field) {
				t.Errorf("%s: problem does not name %s: %+v", bad.query, bad.field, p)
			}
		}
		// A cluster's token is not a node pool list's.
		c := e.createCluster("parent")
		e.do("GET", base+"/clusters/"+c.ID+"/nodepools?size=2&pageToken="+token, nil).problem(400, "HYPERFLEET-VAL-003")
		// Status lists have no tokens, and say so.
		e.do("GET", base+"/clusters/"+c.ID+"/statuses?pageToken="+token, nil).problem(400, "HYPERFLEET-VAL-003")
		// A size may change between pages.
		var next list
		e.do("GET", base+"/clusters?size=5&pageToken="+token, nil).expect(200).into(&next)
		if len(next.Items) != 5 || next.Page != 2 {
			t.Errorf("size=5 after a size=2 page: page %d with %d items", next.Page, len(next.Items))
		}
	})
}

// The test: walking a list through continuation tokens while other
// clients create and delete resources never returns a row twice and never
// misses one that existed for the whole walk.
func TestPageTokensUnderConcurrentInsertsAndDeletes(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		stable := map[string]bool{}
		var doomed []resource.Resource
		for i := range 80 {
			c := e.createCluster(fmt.Sprintf("s%03d", i))
			stable[c.Name] = true
			if i%2 == 0 {
				doomed = append(doomed, e.createCluster(fmt.Sprintf("d%03d", i)))
			}
		}

		stop := make(chan struct{})
		var writes atomic.Int64
		var wg sync.WaitGroup
		send := func(method, path string, body any) {
			var rd *bytes.Reader
			if body != nil {
				b, _ := json.Marshal(body)
				rd = bytes.NewReader(b)
			} else {
				rd = bytes.NewReader(nil)
			}
			req, _ := http.NewRequest(method, e.url+path, rd)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("%s %s: %v", method, path, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				t.Errorf("%s %s = %d", method, path, resp.StatusCode)
				return
			}
			writes.Add(1)
		}
		halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
		defer halt() // before any failure ends the test
		wg.Add(2)
		go func() { // inserts, with names that sort among the stable ones
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				send("POST", base+"/clusters", clusterBody(fmt.Sprintf("s%03d-new%d", i%80, i)))
			}
		}()
		go func() { // deletes (no adapters: a DELETE removes the row)
			defer wg.Done()
			for _, d := range doomed {
				select {
				case <-stop:
					return
				default:
				}
				send("DELETE", d.Href, nil)
			}
		}()

		// Three walks in each order, and more while the writers have not
		// yet done as many writes as there are doomed rows: a fast walk must
		// not end the race before it began.
		queries := []string{"size=7", "size=7&orderBy=name&order=asc", "size=5&order=" + urlQuery("name desc")}
		deadline := time.Now().Add(time.Minute)
		for walk := 0; walk < 3 || (writes.Load() < int64(len(doomed)) && time.Now().Before(deadline)); walk++ {
			for _, query := range queries {
				seen := map[string]int{}
				for _, n := range names(e.walk(base + "/clusters?" + query)) {
					seen[n]++
				}
				for n, times := range seen {
					if times > 1 {
						t.Errorf("%s walk %d: %s returned %d times", query, walk, n, times)
					}
				}
				for n := range stable {
					if seen[n] == 0 {
						t.Errorf("%s walk %d: %s, present throughout, was skipped", query, walk, n)
					}
				}
			}
		}
		halt()
		if writes.Load() < int64(len(doomed)) {
			t.Fatalf("only %d writes ran beside the walks: the test did not race anything", writes.Load())
		}

		// At rest the total is exact and the tokens read every row once.
		pages := e.walk(base + "/clusters?size=50")
		if int64(len(names(pages))) != pages[0].Total {
			t.Errorf("at rest: %d clusters over the pages, total %d", len(names(pages)), pages[0].Total)
		}
		t.Logf("%d writes ran beside the walks; %d clusters at the end", writes.Load(), pages[0].Total)
	}, withAdapters([]string{}, []string{}))
}
