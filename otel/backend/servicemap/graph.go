// Package servicemap builds a service map from spans the way SigNoz draws
// one, without SigNoz: an edge A -> B for every span of service B whose
// parent is a span of service A (A != B), weighted by the child's calls,
// errors and latency; and an edge A -> <system> for every non-SERVER span of
// A with messaging.system or db.system (SigNoz collapses every broker or
// database into one node named for its system, "kafka", "postgresql").
//
// Builder.TopicGraph draws what SigNoz cannot (SigNoz/signoz#4701): each
// topic a node of its own between the services that write to it and those
// that read from it, from the spans' messaging.destination.name.
//
// SigNoz joins parent and child only inside one batch of spans as its
// collector inserts them; Options.SameBatch reproduces that strictness
// (with Options.Batch, the collector's batch processor across requests), the
// default joins across everything received. Spans arrive from an in-process
// exporter (Exporter), an OTLP receiver on loopback (Receiver, gRPC and
// HTTP), or an OTLP JSON file (ReadJSON).
package servicemap

import (
	"cmp"
	"encoding/hex"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// Kind is the OTLP span kind (1 internal, 2 server, 3 client, 4 producer, 5 consumer).
type Kind int

const (
	KindUnspecified Kind = 0
	KindInternal    Kind = 1
	KindServer      Kind = 2
	KindClient      Kind = 3
	KindProducer    Kind = 4
	KindConsumer    Kind = 5
)

// Span is what the map needs of one span.
type Span struct {
	TraceID      [16]byte
	SpanID       [8]byte
	ParentSpanID [8]byte // zero for a root
	Service      string
	Name         string
	Kind         Kind
	Duration     time.Duration
	Error        bool // status code ERROR
	// DeadLetter: the span handled a dead letter (it carries
	// record.ReasonAttribute): the map counts those apart from errors.
	DeadLetter  bool
	Messaging   string // messaging.system
	Destination string // messaging.destination.name: the topic
	DB          string // db.system, or db.system.name
}

// HasParent reports whether the span has a parent.
func (s Span) HasParent() bool { return s.ParentSpanID != [8]byte{} }

// ID is the span id in hex.
func (s Span) ID() string { return hex.EncodeToString(s.SpanID[:]) }

// Options of a Builder.
type Options struct {
	// SameBatch joins a child with its parent only when both are in one
	// batch as SigNoz's collector inserts it: its ClickHouse view joins the
	// spans of one insert, and the collector inserts each batch its batch
	// processor sends on. Batch says how the batches form.
	SameBatch bool
	// Batch is the collector's batch processor, replayed over the Add calls
	// in the order and at the time they happen. The zero value is no batch
	// processor: each Add (one export request, one file line) is a batch.
	Batch BatchConfig
	// MaxSpans bounds memory; spans beyond it are counted and dropped.
	// Zero means 2,000,000.
	MaxSpans int
}

// BatchConfig is a collector batch processor's send_batch_size,
// send_batch_max_size and timeout (0: none).
type BatchConfig struct {
	Size, MaxSize int
	Timeout       time.Duration
}

// SigNozBatch is the batch processor of the workshop's SigNoz collector
// (deploy/signoz/otel-collector.yaml).
var SigNozBatch = BatchConfig{Size: 10_000, MaxSize: 11_000, Timeout: 10 * time.Second}

// Builder accumulates spans; Graph can be called at any time. Safe for
// concurrent use.
type Builder struct {
	opts    Options
	now     func() time.Time // when an Add happens (a test's clock)
	mu      sync.Mutex
	batches batcher
	spans   map[spanKey]parentRef
	kept    []child
	total   int
	dropped int
	byName  map[string]int // span counts per service and name, for the summary
}

type spanKey struct {
	trace [16]byte
	span  [8]byte
}

// Spans are numbered in the order they arrive, dropped ones included: the
// batcher cuts batches at positions.
type parentRef struct {
	service string
	pos     int
}

type child struct {
	key      spanKey // the parent's key
	service  string
	pos      int
	duration time.Duration
	err      bool
	dead     bool
	kind     Kind
	msg, db  string
	dest     string
	root     bool
}

// NewBuilder makes an empty builder.
func NewBuilder(o Options) *Builder {
	if o.MaxSpans <= 0 {
		o.MaxSpans = 2_000_000
	}
	return &Builder{opts: o, now: time.Now, batches: batcher{cfg: o.Batch}, spans: map[spanKey]parentRef{}, byName: map[string]int{}}
}

// Add takes the spans of one request (or file line).
func (b *Builder) Add(spans []Span) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.batches.tick(now)
	first := b.batches.in
	for i, s := range spans {
		if b.total >= b.opts.MaxSpans {
			b.dropped++
			continue
		}
		b.total++
		b.byName[s.Service+"\x00"+s.Name]++
		b.spans[spanKey{s.TraceID, s.SpanID}] = parentRef{service: s.Service, pos: first + i}
		b.kept = append(b.kept, child{
			key: spanKey{s.TraceID, s.ParentSpanID}, service: s.Service, pos: first + i,
			duration: s.Duration, err: s.Error, dead: s.DeadLetter, kind: s.Kind, msg: s.Messaging, db: s.DB, dest: s.Destination, root: !s.HasParent(),
		})
	}
	b.batches.receive(now, len(spans))
}

// batcher replays a collector's batch processor (go.opentelemetry.io/
// collector/processor/batchprocessor v0.144.0, batch_processor.go: startLoop,
// processItem, sendItems, and batchTraces.split) over span positions, to
// know which spans it sends on together. A request joins the pending spans;
// while Size or more are pending, the first MaxSize (all, without MaxSize)
// go; a timer, re-armed for Timeout after it fires and after a send by size,
// sends what is pending. Without a timer (no Size or no Timeout) each
// request goes at once. The timer's phase is unknown (a collector's starts
// with the collector): it starts at the first request.
type batcher struct {
	cfg      BatchConfig
	in, out  int       // spans received, spans sent on; the rest are pending
	cuts     []int     // position of the first span after each batch sent
	deadline time.Time // the timer's next fire; zero before the first request
}

func (c *batcher) timed() bool { return c.cfg.Size > 0 && c.cfg.Timeout > 0 }

// tick fires the timer as often as it would have by now. A fire with
// nothing pending sends nothing, so the fires after the last send are
// skipped at once.
func (c *batcher) tick(now time.Time) {
	if !c.timed() {
		return
	}
	if c.deadline.IsZero() {
		c.deadline = now.Add(c.cfg.Timeout)
	}
	for !now.Before(c.deadline) {
		if c.in == c.out {
			c.deadline = c.deadline.Add((now.Sub(c.deadline)/c.cfg.Timeout + 1) * c.cfg.Timeout)
			return
		}
		c.send()
		c.deadline = c.deadline.Add(c.cfg.Timeout)
	}
}

// receive takes a request of n spans at now.
func (c *batcher) receive(now time.Time, n int) {
	c.in += n
	sent := false
	for c.in > c.out && (!c.timed() || c.in-c.out >= c.cfg.Size) {
		c.send()
		sent = true
	}
	if sent && c.timed() {
		c.deadline = now.Add(c.cfg.Timeout)
	}
}

// send sends on one batch from the front of the pending spans.
func (c *batcher) send() {
	n := c.in - c.out
	if c.cfg.MaxSize > 0 && n > c.cfg.MaxSize {
		n = c.cfg.MaxSize
	}
	c.out += n
	c.cuts = append(c.cuts, c.out)
}

// of is the batch of the span at pos (the pending spans are the last one).
func (c *batcher) of(pos int) int { return sort.SearchInts(c.cuts, pos+1) }

// count is the number of batches: those sent on, and the pending one.
func (c *batcher) count() int {
	if c.in > c.out {
		return len(c.cuts) + 1
	}
	return len(c.cuts)
}

// Edge is one arrow of the map, with the child spans' statistics.
type Edge struct {
	From, To string
	// Kind is "service" (parent/child across services), "messaging" or
	// "database" (spans naming a system); in a TopicGraph also "produce"
	// (a service's PRODUCER spans into a topic) and "consume" (a topic into
	// a service's CONSUMER spans), whose Calls are records, one span each.
	Kind   string
	Calls  int
	Errors int
	// DeadLetters are the calls that handled a dead letter (a record the
	// packer rejected, or its dead letter written): counted apart, as they
	// are no failure.
	DeadLetters int
	P50         time.Duration
	P99         time.Duration
}

// Node is a service (or a messaging or database system, or a topic) with
// its span count.
type Node struct {
	// Name is how edges name the node: a service's or system's name; for a
	// topic, its system's and its own, "kafka/toys", as a service may carry
	// a topic's name.
	Name   string
	Spans  int
	System bool // a messaging or database system, not a service
	// Topic is a topic's name (messaging.destination.name) and Messaging
	// its system's (messaging.system); both empty for services and systems.
	Topic, Messaging string
}

// Label is what a drawing writes in the node: its name, or the topic's.
func (n Node) Label() string {
	if n.Topic != "" {
		return n.Topic
	}
	return n.Name
}

// topicName is the Name of the node of topic dest of messaging system msg.
func topicName(msg, dest string) string { return msg + "/" + dest }

// Graph is the map.
type Graph struct {
	Nodes []Node
	Edges []Edge
	// Spans received, Dropped beyond MaxSpans, Orphans whose parent was
	// never seen.
	Spans, Dropped, Orphans int
	// SameBatch: joined per batch (Options.SameBatch) into Batches batches;
	// CrossBatch spans had their parent in another batch, so their edge is
	// lost.
	SameBatch           bool
	Batches, CrossBatch int
	// Names counts spans by service and span name.
	Names []NameCount
}

// NameCount is how many spans of one name a service made.
type NameCount struct {
	Service, Name string
	Count         int
}

// toSystem reports whether the edge goes from a service to its messaging or
// database system, rather than along the flow between services and topics.
func (e Edge) toSystem() bool { return e.Kind == "messaging" || e.Kind == "database" }

// Edge returns the edge from -> to, if any.
func (g Graph) Edge(from, to string) (Edge, bool) {
	for _, e := range g.Edges {
		if e.From == from && e.To == to {
			return e, true
		}
	}
	return Edge{}, false
}

// Graph computes the map from everything added so far, as SigNoz draws it.
func (b *Builder) Graph() Graph { return b.graph(false) }

// TopicGraph computes the map with a node for each topic: an edge from each
// service to the topics its PRODUCER spans name (messaging.destination.name)
// and from each topic to the services whose CONSUMER spans name it, with the
// records on them. Such spans draw no edge to their messaging system, and a
// CONSUMER span whose parent is in another service draws no service edge:
// the topic between them shows that hop. Topic edges need no parent, so
// SameBatch leaves them whole.
func (b *Builder) TopicGraph() Graph { return b.graph(true) }

func (b *Builder) graph(topics bool) Graph {
	b.mu.Lock()
	defer b.mu.Unlock()
	edges, nodes := edgeSet{}, nodeSet{}
	g := Graph{Spans: b.total, Dropped: b.dropped, SameBatch: b.opts.SameBatch}
	if g.SameBatch {
		g.Batches = b.batches.count()
	}
	for _, c := range b.kept {
		nodes.see(Node{Name: c.service})
		topic := ""
		if topics && c.msg != "" && c.dest != "" && (c.kind == KindProducer || c.kind == KindConsumer) {
			topic = topicName(c.msg, c.dest)
		}
		if !c.root {
			p, ok := b.spans[c.key]
			switch {
			case !ok:
				g.Orphans++
			case b.opts.SameBatch && b.batches.of(p.pos) != b.batches.of(c.pos):
				g.CrossBatch++
			case p.service != c.service && (topic == "" || c.kind != KindConsumer):
				edges.add(p.service, c.service, "service", c)
			}
		}
		switch {
		case topic != "" && c.kind == KindProducer:
			nodes.see(Node{Name: topic, Topic: c.dest, Messaging: c.msg})
			edges.add(c.service, topic, "produce", c)
		case topic != "":
			nodes.see(Node{Name: topic, Topic: c.dest, Messaging: c.msg})
			edges.add(topic, c.service, "consume", c)
		case c.msg != "" && c.kind != KindServer:
			nodes.see(Node{Name: c.msg, System: true})
			edges.add(c.service, c.msg, "messaging", c)
		}
		if c.db != "" && c.kind != KindServer {
			nodes.see(Node{Name: c.db, System: true})
			edges.add(c.service, c.db, "database", c)
		}
	}
	g.Edges, g.Nodes, g.Names = edges.sorted(), nodes.sorted(), b.names()
	return g
}

// edgeSet accumulates the calls of each edge.
type edgeSet map[[2]string]*edgeCalls

type edgeCalls struct {
	kind         string
	errors, dead int
	durs         []time.Duration
}

func (e edgeSet) add(from, to, kind string, c child) {
	k := [2]string{from, to}
	a := e[k]
	if a == nil {
		a = &edgeCalls{kind: kind}
		e[k] = a
	}
	a.durs = append(a.durs, c.duration)
	if c.err {
		a.errors++
	}
	if c.dead {
		a.dead++
	}
}

// sorted are the edges in kindOrder, then by their ends.
func (e edgeSet) sorted() []Edge {
	var out []Edge
	for k, a := range e {
		slices.Sort(a.durs)
		out = append(out, Edge{From: k[0], To: k[1], Kind: a.kind, Calls: len(a.durs), Errors: a.errors, DeadLetters: a.dead,
			P50: quantile(a.durs, 0.50), P99: quantile(a.durs, 0.99)})
	}
	slices.SortFunc(out, func(x, y Edge) int {
		return cmp.Or(cmp.Compare(kindOrder(x.Kind), kindOrder(y.Kind)), cmp.Compare(x.From, y.From), cmp.Compare(x.To, y.To))
	})
	return out
}

// nodeSet counts the spans of each service; systems (kafka, a database) and
// topics are nodes without spans of their own.
type nodeSet map[string]*Node

func (n nodeSet) see(node Node) {
	have := n[node.Name]
	if have == nil {
		have = &node
		n[node.Name] = have
	}
	if !node.System && node.Topic == "" {
		have.Spans++
	}
}

// sorted are the services by name, then the topics, then the systems.
func (n nodeSet) sorted() []Node {
	var out []Node
	for _, node := range n {
		out = append(out, *node)
	}
	slices.SortFunc(out, func(x, y Node) int {
		return cmp.Or(cmp.Compare(nodeOrder(x), nodeOrder(y)), cmp.Compare(x.Name, y.Name))
	})
	return out
}

func nodeOrder(n Node) int {
	switch {
	case n.System:
		return 2
	case n.Topic != "":
		return 1
	}
	return 0
}

func (b *Builder) names() []NameCount {
	var out []NameCount
	for k, n := range b.byName {
		svc, name := splitName(k)
		out = append(out, NameCount{Service: svc, Name: name, Count: n})
	}
	slices.SortFunc(out, func(x, y NameCount) int {
		return cmp.Or(cmp.Compare(x.Service, y.Service), cmp.Compare(x.Name, y.Name))
	})
	return out
}

func splitName(k string) (string, string) {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return k[:i], k[i+1:]
		}
	}
	return k, ""
}

// kindOrder sorts edges along the flow: between services, into topics, out
// of them, then to systems.
func kindOrder(k string) int {
	switch k {
	case "service":
		return 0
	case "produce":
		return 1
	case "consume":
		return 2
	case "messaging":
		return 3
	}
	return 4
}

// quantile is the nearest-rank quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
