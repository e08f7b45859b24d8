package sleighbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// client is what one client saw.
type client struct {
	requests, pages, busy, failed, pairs int
	firstFailure                         string
	done                                 bool
	full, busyWait                       []time.Duration
}

// page runs the clients until each has paged the whole manifest or
// cfg.Duration is over.
func page(ctx context.Context, cfg Config, base string, r *Result) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	clients := make([]client, cfg.Clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i].run(ctx, hc, base, cfg.Limit, cfg.Pairs)
		}()
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	var full, busy []time.Duration
	for _, c := range clients {
		r.Requests += c.requests
		r.Pages += c.pages
		r.Busy += c.busy
		r.Failed += c.failed
		if r.FirstFailure == "" {
			r.FirstFailure = c.firstFailure
		}
		if c.done {
			r.ClientsDone++
		}
		full = append(full, c.full...)
		busy = append(busy, c.busyWait...)
	}
	r.P50ms, r.P99ms, r.MaxMs = quantileMs(full, 0.50), quantileMs(full, 0.99), quantileMs(full, 1)
	r.BusyP99ms = quantileMs(busy, 0.99)
}

// quantileMs is the q quantile of ds (nearest rank) in milliseconds.
func quantileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(q*float64(len(ds))+0.5) - 1
	return float64(ds[min(max(i, 0), len(ds)-1)]) / float64(time.Millisecond)
}

// run pages from the first page to the last, or until ctx ends or a request
// fails other than by a 503.
func (c *client) run(ctx context.Context, hc *http.Client, base string, limit, want int) {
	next := "/manifest?limit=" + strconv.Itoa(limit)
	for next != "" && ctx.Err() == nil {
		t0 := time.Now()
		status, body, retry, err := get(ctx, hc, base+next)
		took := time.Since(t0)
		if ctx.Err() != nil {
			return // cut off by the bench's deadline: neither answer nor failure
		}
		c.requests++
		switch {
		case err == nil && status == http.StatusOK:
			n, nx, perr := pageTail(body)
			if perr != nil {
				c.fail(perr.Error())
				return
			}
			c.pages++
			c.pairs += n
			if n == limit {
				c.full = append(c.full, took)
			}
			next = nx
		case err == nil && status == http.StatusServiceUnavailable:
			c.busy++
			c.busyWait = append(c.busyWait, took)
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
		default:
			if err == nil {
				err = fmt.Errorf("%d %s", status, bytes.TrimSpace(body))
			}
			c.fail(err.Error())
			return
		}
	}
	if next == "" {
		c.done = c.pairs == want
		if !c.done {
			c.fail(fmt.Sprintf("paged through %d pairs, want %d", c.pairs, want))
		}
	}
}

func (c *client) fail(why string) {
	c.failed++
	if c.firstFailure == "" {
		c.firstFailure = why
	}
}

func get(ctx context.Context, hc *http.Client, url string) (status int, body []byte, retry time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, 0, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer res.Body.Close()
	body, err = io.ReadAll(res.Body)
	retry = time.Second
	if s, e := strconv.Atoi(res.Header.Get("Retry-After")); e == nil && s > 0 {
		retry = time.Duration(s) * time.Second
	}
	return res.StatusCode, body, retry, err
}

// pageTail reads a page's pair count and next link from its end, where the
// sleigh writes them (processors/sleigh writePage): the last "pairs" member
// is the page's, and a client has no need to decode the pairs.
func pageTail(body []byte) (pairs int, next string, err error) {
	i := bytes.LastIndex(body, []byte(`"pairs":`))
	if i < 0 {
		return 0, "", fmt.Errorf("a page without a pair count: %.200s", body)
	}
	var tail struct {
		Pairs int    `json:"pairs"`
		Next  string `json:"next"`
	}
	if err := json.Unmarshal(append([]byte("{"), body[i:]...), &tail); err != nil {
		return 0, "", fmt.Errorf("a page's end: %w: %.200s", err, body[i:])
	}
	return tail.Pairs, tail.Next, nil
}
