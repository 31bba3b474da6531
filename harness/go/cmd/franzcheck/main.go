// Command franzcheck runs franz-go (kgo, kadm) against a Kafka cluster: the simulator in the suite
// (tests/clients/test_franz_go.py builds and drives it).
//
//	franzcheck -bootstrap HOST:PORT admin
//	franzcheck -bootstrap HOST:PORT -topic T -partitions 3 -records 600 failover
//	franzcheck -bootstrap HOST:PORT -topic T -partitions 3 -records 400 -group G group
//
// It speaks JSON lines on its standard output. A line {"wait": NAME, ...} asks the driver to do
// something to the cluster (crash a broker): the program then reads one line from its standard input
// before it goes on. The last line is {"result": {...}}: what the client was told and what it read,
// for the driver to check against the cluster. The whole run is bounded by -timeout; a run that
// cannot finish prints {"fatal": MESSAGE} and exits 1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	bootstrap  = flag.String("bootstrap", "127.0.0.1:9092", "a broker's HOST:PORT")
	topic      = flag.String("topic", "franz", "the topic of failover and group (created by the driver)")
	partitions = flag.Int("partitions", 3, "the topic's partitions")
	records    = flag.Int("records", 400, "records produced in each half of the run")
	group      = flag.String("group", "franz-group", "the consumer group of group")
	serverSide = flag.Bool("server-side", false, "group: the consumer group protocol (KIP-848: kgo's ServerSideBalancer)")
	timeout    = flag.Duration("timeout", 90*time.Second, "the whole run's bound")
)

var (
	outMu sync.Mutex
	out   = json.NewEncoder(os.Stdout)
	stdin = bufio.NewScanner(os.Stdin)
)

func emit(v any) {
	outMu.Lock()
	defer outMu.Unlock()
	if err := out.Encode(v); err != nil {
		panic(err)
	}
}

// wait asks the driver to act and blocks until it answers with a line.
func wait(name string, info map[string]any) {
	info["wait"] = name
	emit(info)
	if !stdin.Scan() {
		fatal(fmt.Errorf("the driver closed standard input at %q", name))
	}
}

func fatal(err error) {
	emit(map[string]any{"fatal": err.Error()})
	os.Exit(1)
}

func must(err error, what string) {
	if err != nil {
		fatal(fmt.Errorf("%s: %w", what, err))
	}
}

// errName is the Kafka error's name ("" for none), or the Go error's text for anything else.
func errName(err error) string {
	if err == nil {
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func options(extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(*bootstrap),
		kgo.ClientID("franzcheck"),
		kgo.DialTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
	}, extra...)
}

func newClient(extra ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(options(extra...)...)
	must(err, "new client")
	return cl
}

// Rec is one record as a client saw it: partition, offset, value.
type Rec struct {
	P int32  `json:"p"`
	O int64  `json:"o"`
	V string `json:"v"`
}

func main() {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var result map[string]any
	switch flag.Arg(0) {
	case "admin":
		result = admin(ctx)
	case "failover":
		result = failover(ctx)
	case "group":
		result = groupRun(ctx)
	default:
		fatal(fmt.Errorf("unknown command %q: admin, failover or group", flag.Arg(0)))
	}
	emit(map[string]any{"result": result})
}

// -- admin ---------------------------------------------------------------------------------------

type partitionView struct {
	Leader   int32   `json:"leader"`
	Epoch    int32   `json:"epoch"`
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
	Err      string  `json:"err"`
}

func topicsView(ctx context.Context, adm *kadm.Client, names ...string) map[string]any {
	listed, err := adm.ListTopics(ctx, names...)
	must(err, "ListTopics")
	view := map[string]any{}
	for _, t := range listed.Sorted() {
		if t.Err != nil {
			view[t.Topic] = errName(t.Err)
			continue
		}
		ps := map[string]partitionView{}
		for _, p := range t.Partitions.Sorted() {
			ps[fmt.Sprint(p.Partition)] = partitionView{p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, errName(p.Err)}
		}
		view[t.Topic] = ps
	}
	return view
}

func configView(ctx context.Context, adm *kadm.Client, name string, keys ...string) map[string]any {
	described, err := adm.DescribeTopicConfigs(ctx, name)
	must(err, "DescribeTopicConfigs")
	rc, err := described.On(name, nil)
	must(err, "DescribeTopicConfigs.On")
	view := map[string]any{"err": errName(rc.Err)}
	for _, c := range rc.Configs {
		for _, k := range keys {
			if c.Key == k {
				view[k] = map[string]any{"value": c.MaybeValue(), "source": c.Source.String()}
			}
		}
	}
	return view
}

func admin(ctx context.Context) map[string]any {
	cl := newClient()
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(10_000)
	r := map[string]any{}

	created, err := adm.CreateTopics(ctx, 3, 3, map[string]*string{"retention.ms": kadm.StringPtr("3600000")},
		"go-admin", "go-admin-2")
	must(err, "CreateTopics")
	ct := map[string]any{}
	for _, c := range created.Sorted() {
		ct[c.Topic] = map[string]any{"err": errName(c.Err), "partitions": c.NumPartitions,
			"replication_factor": c.ReplicationFactor, "id": c.ID.String()}
	}
	r["create_topics"] = ct
	again, err := adm.CreateTopic(ctx, 1, 1, nil, "go-admin")
	r["create_existing"] = errName(firstErr(err, again.Err))
	bad, err := adm.CreateTopic(ctx, 1, 7, nil, "go-bad")
	r["create_rf_7"] = errName(firstErr(err, bad.Err))

	brokers, err := adm.ListBrokers(ctx)
	must(err, "ListBrokers")
	bs := []map[string]any{}
	for _, b := range brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		bs = append(bs, map[string]any{"id": b.NodeID, "rack": rack})
	}
	r["brokers"] = bs

	dc := kmsg.NewPtrDescribeClusterRequest()
	cluster, err := dc.RequestWith(ctx, cl)
	must(err, "DescribeCluster")
	ids := []int32{}
	for _, b := range cluster.Brokers {
		ids = append(ids, b.NodeID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	r["describe_cluster"] = map[string]any{"err": errName(kerr.ErrorForCode(cluster.ErrorCode)),
		"cluster_id": cluster.ClusterID, "controller": cluster.ControllerID, "brokers": ids}

	grown, err := adm.CreatePartitions(ctx, 2, "go-admin")
	must(err, "CreatePartitions")
	g, _ := grown.On("go-admin", nil)
	r["create_partitions"] = errName(g.Err)
	r["topics"] = topicsView(ctx, adm, "go-admin", "go-admin-2")

	r["configs"] = configView(ctx, adm, "go-admin", "retention.ms", "retention.bytes")
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("1048576")},
	}, "go-admin")
	must(err, "AlterTopicConfigs")
	a, _ := altered.On("go-admin", nil)
	r["alter_configs"] = errName(a.Err)
	r["configs_altered"] = configView(ctx, adm, "go-admin", "retention.ms", "retention.bytes")

	producer := newClient(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer producer.Close()
	offsets := []int64{}
	for i := range 10 {
		res := producer.ProduceSync(ctx, &kgo.Record{Topic: "go-admin", Partition: 0, Value: fmt.Appendf(nil, "a%d", i)})
		rec, err := res.First()
		must(err, "produce to go-admin")
		offsets = append(offsets, rec.Offset)
	}
	r["produced_offsets"] = offsets
	r["start_offsets"] = listed(adm.ListStartOffsets(ctx, "go-admin"))
	r["end_offsets"] = listed(adm.ListEndOffsets(ctx, "go-admin"))
	var toDelete kadm.Offsets
	toDelete.Add(kadm.Offset{Topic: "go-admin", Partition: 0, At: 4})
	deleted, err := adm.DeleteRecords(ctx, toDelete)
	must(err, "DeleteRecords")
	d, _ := deleted.Lookup("go-admin", 0)
	r["delete_records"] = map[string]any{"err": errName(d.Err), "low_watermark": d.LowWatermark}
	r["start_offsets_after_delete"] = listed(adm.ListStartOffsets(ctx, "go-admin"))

	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"go-admin": {0: {}}})
	must(err, "DescribeProducers")
	ps := []map[string]any{}
	producers.EachProducer(func(p kadm.DescribedProducer) {
		ps = append(ps, map[string]any{"partition": p.Partition, "producer_id": p.ProducerID,
			"epoch": p.ProducerEpoch, "last_sequence": p.LastSequence})
	})
	r["producers"] = ps

	elected, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"go-admin": {0: {}, 1: {}}, "go-none": {0: {}}})
	must(err, "ElectLeaders")
	el := map[string]string{}
	for t, ps := range elected {
		for p, e := range ps {
			el[fmt.Sprintf("%s-%d", t, p)] = errName(e.Err)
		}
	}
	r["elect_preferred"] = el

	before := topicsView(ctx, adm, "go-admin")["go-admin"].(map[string]partitionView)["0"]
	target := append([]int32{}, before.Replicas[1:]...)
	target = append(target, before.Replicas[0])
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("go-admin", 0, target)
	reassigned, err := adm.AlterPartitionAssignments(ctx, req)
	must(err, "AlterPartitionAssignments")
	ra := ""
	reassigned.Each(func(p kadm.AlterPartitionAssignmentsResponse) { ra = errName(p.Err) })
	r["reassign"] = map[string]any{"err": ra, "target": target}
	var replicas []int32
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		replicas = topicsView(ctx, adm, "go-admin")["go-admin"].(map[string]partitionView)["0"].Replicas
		ongoing, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"go-admin": {0: {}}})
		must(err, "ListPartitionReassignments")
		if len(ongoing) == 0 && fmt.Sprint(replicas) == fmt.Sprint(target) {
			break
		}
	}
	r["replicas_after_reassign"] = replicas

	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"go-admin": {0: {}}})
	must(err, "DescribeAllLogDirs")
	holders := []int32{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "go-admin" && p.Partition == 0 {
				holders = append(holders, d.Broker)
			}
		})
	})
	sort.Slice(holders, func(i, j int) bool { return holders[i] < holders[j] })
	r["log_dir_holders"] = holders

	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: "go-admin", Partition: 0, At: 7, LeaderEpoch: -1})
	committed, err := adm.CommitOffsets(ctx, "go-admin-group", commit)
	must(err, "CommitOffsets")
	r["commit"] = errName(committed.Error())
	fetched, err := adm.FetchOffsets(ctx, "go-admin-group")
	must(err, "FetchOffsets")
	f, _ := fetched.Lookup("go-admin", 0)
	r["fetched_offset"] = f.At
	groups, err := adm.ListGroups(ctx)
	must(err, "ListGroups")
	r["groups"] = groups.Groups()
	described, err := adm.DescribeGroups(ctx, "go-admin-group")
	must(err, "DescribeGroups")
	dg := described["go-admin-group"]
	r["group_state"] = map[string]any{"err": errName(dg.Err), "state": dg.State, "members": len(dg.Members)}
	gone, err := adm.DeleteGroups(ctx, "go-admin-group")
	must(err, "DeleteGroups")
	r["delete_group"] = errName(gone["go-admin-group"].Err)

	dropped, err := adm.DeleteTopics(ctx, "go-admin-2")
	must(err, "DeleteTopics")
	dt, _ := dropped.On("go-admin-2", nil)
	r["delete_topics"] = errName(dt.Err)
	all, err := adm.ListTopics(ctx)
	must(err, "ListTopics")
	r["topics_after_delete"] = all.Names()
	return r
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func listed(offsets kadm.ListedOffsets, err error) map[string]int64 {
	must(err, "ListOffsets")
	view := map[string]int64{}
	offsets.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			fatal(fmt.Errorf("ListOffsets %s-%d: %w", o.Topic, o.Partition, o.Err))
		}
		view[fmt.Sprint(o.Partition)] = o.Offset
	})
	return view
}

// -- failover ------------------------------------------------------------------------------------

func leaders(ctx context.Context, adm *kadm.Client) map[string]int32 {
	view := map[string]int32{}
	for p, v := range topicsView(ctx, adm, *topic)[*topic].(map[string]partitionView) {
		view[p] = v.Leader
	}
	return view
}

// producer produces values "<prefix><i>", record i to partition i % partitions, acks=all (kgo's
// default, idempotent), and keeps what it was told.
type producer struct {
	cl     *kgo.Client
	mu     sync.Mutex
	acked  []Rec
	errors []string
}

func newProducer() *producer {
	return &producer{cl: newClient(kgo.RecordPartitioner(kgo.ManualPartitioner())), acked: []Rec{}, errors: []string{}}
}

func (p *producer) produce(ctx context.Context, prefix string, from, to int) {
	for i := from; i < to; i++ {
		record := &kgo.Record{Topic: *topic, Partition: int32(i % *partitions), Value: fmt.Appendf(nil, "%s%d", prefix, i)}
		p.cl.Produce(ctx, record, func(r *kgo.Record, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.errors = append(p.errors, fmt.Sprintf("%s: %v", r.Value, err))
				return
			}
			p.acked = append(p.acked, Rec{r.Partition, r.Offset, string(r.Value)})
		})
	}
	must(p.cl.Flush(ctx), "flush")
}

func failover(ctx context.Context) map[string]any {
	adm := kadm.NewClient(newClient())
	defer adm.Close()
	prod := newProducer()
	defer prod.cl.Close()

	starts := map[int32]kgo.Offset{}
	for p := range *partitions {
		starts[int32(p)] = kgo.NewOffset().AtStart()
	}
	consumer := newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: starts}),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer consumer.Close()
	var cmu sync.Mutex
	consumed := []Rec{}
	fetchErrors := []string{}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pollCtx, done := context.WithTimeout(ctx, 200*time.Millisecond)
			fetches := consumer.PollFetches(pollCtx)
			done()
			cmu.Lock()
			fetches.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					fetchErrors = append(fetchErrors, fmt.Sprintf("%s-%d: %v", t, p, err))
				}
			})
			fetches.EachRecord(func(r *kgo.Record) {
				consumed = append(consumed, Rec{r.Partition, r.Offset, string(r.Value)})
			})
			cmu.Unlock()
		}
	}()

	half := *records
	prod.produce(ctx, "v", 0, half)
	before := leaders(ctx, adm)
	wait("crash", map[string]any{"leaders": before})
	began := time.Now()
	prod.produce(ctx, "v", half, 2*half)
	produceMs := time.Since(began).Milliseconds()

	// Read until every acknowledged record has come back (or the run's bound).
	want := map[Rec]bool{}
	prod.mu.Lock()
	for _, r := range prod.acked {
		want[r] = true
	}
	prod.mu.Unlock()
	for {
		cmu.Lock()
		got := 0
		for _, r := range consumed {
			if want[r] {
				got++
			}
		}
		cmu.Unlock()
		if got >= len(want) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	<-stopped
	cmu.Lock()
	defer cmu.Unlock()
	return map[string]any{
		"acked": prod.acked, "produce_errors": prod.errors, "consumed": consumed,
		"fetch_errors": fetchErrors, "leaders_before": before, "leaders_after": leaders(ctx, adm),
		"second_half_ms": produceMs,
	}
}

// -- group ---------------------------------------------------------------------------------------

// Event is one thing a group member did, in the order the members did them (Seq): it read a record
// ("read"), committed an offset ("commit": the next offset to read) or failed to ("commit-failed").
type Event struct {
	Seq    int    `json:"seq"`
	Member int    `json:"member"`
	Kind   string `json:"kind"`
	P      int32  `json:"p"`
	O      int64  `json:"o"`
	V      string `json:"v,omitempty"`
	Err    string `json:"err,omitempty"`
}

type journal struct {
	mu     sync.Mutex
	events []Event
}

func (j *journal) add(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Seq = len(j.events)
	j.events = append(j.events, e)
}

// member is one consumer of the group: it polls, records what it read, commits what it read
// synchronously (kgo's CommitRecords), and only then lets a rebalance happen.
type member struct {
	id      int
	cl      *kgo.Client
	journal *journal
	paused  chan bool
	done    chan struct{}
}

func newMember(id int, j *journal) *member {
	opts := []kgo.Opt{
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	if *serverSide {
		// KIP-848: the coordinator assigns (its uniform assignor for kgo's sticky balancer).
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	}
	cl := newClient(opts...)
	return &member{id: id, cl: cl, journal: j, paused: make(chan bool), done: make(chan struct{})}
}

func (m *member) run(ctx context.Context) {
	defer close(m.done)
	paused := false
	for ctx.Err() == nil {
		select {
		case paused = <-m.paused:
			m.paused <- paused // acknowledged: no poll is under way
			continue
		default:
		}
		if paused {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		pollCtx, done := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := m.cl.PollFetches(pollCtx)
		done()
		var read []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			m.journal.add(Event{Member: m.id, Kind: "read", P: r.Partition, O: r.Offset, V: string(r.Value)})
			read = append(read, r)
		})
		if len(read) > 0 {
			commitCtx, done := context.WithTimeout(ctx, 15*time.Second)
			err := m.cl.CommitRecords(commitCtx, read...)
			done()
			last := map[int32]int64{}
			for _, r := range read {
				last[r.Partition] = max(last[r.Partition], r.Offset+1)
			}
			for p, o := range last {
				if err != nil {
					m.journal.add(Event{Member: m.id, Kind: "commit-failed", P: p, O: o, Err: err.Error()})
				} else {
					m.journal.add(Event{Member: m.id, Kind: "commit", P: p, O: o})
				}
			}
		}
		m.cl.AllowRebalance()
	}
}

func (m *member) pause(ctx context.Context, p bool) {
	select {
	case m.paused <- p:
		<-m.paused
	case <-ctx.Done():
		fatal(fmt.Errorf("member %d: %w", m.id, ctx.Err()))
	}
}

func groupRun(ctx context.Context) map[string]any {
	adm := kadm.NewClient(newClient())
	defer adm.Close()
	prod := newProducer()
	defer prod.cl.Close()
	j := &journal{}
	half := *records
	prod.produce(ctx, "g", 0, half)

	members := []*member{newMember(0, j), newMember(1, j)}
	runCtx, stopMembers := context.WithCancel(ctx)
	defer stopMembers()
	for _, m := range members {
		go m.run(runCtx)
	}
	distinctRead := func() int {
		j.mu.Lock()
		defer j.mu.Unlock()
		seen := map[[2]int64]bool{}
		for _, e := range j.events {
			if e.Kind == "read" {
				seen[[2]int64{int64(e.P), e.O}] = true
			}
		}
		return len(seen)
	}
	for distinctRead() < half/2 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	for _, m := range members {
		m.pause(ctx, true)
	}
	coordinator := func() int32 {
		found := adm.FindGroupCoordinators(ctx, *group)
		c, ok := found[*group]
		if !ok || c.Err != nil {
			fatal(fmt.Errorf("FindGroupCoordinators: %v", c.Err))
		}
		return c.NodeID
	}
	before := coordinator()
	readBefore := distinctRead()
	wait("crash-coordinator", map[string]any{"coordinator": before, "read": readBefore})
	for _, m := range members {
		m.pause(ctx, false)
	}
	prod.produce(ctx, "g", half, 2*half)

	// Go on until every partition's committed offset is its end: every record read and committed.
	end := map[int32]int64{}
	prod.mu.Lock()
	for _, r := range prod.acked {
		end[r.P] = max(end[r.P], r.O+1)
	}
	prod.mu.Unlock()
	for ctx.Err() == nil {
		j.mu.Lock()
		top := map[int32]int64{}
		for _, e := range j.events {
			if e.Kind == "commit" {
				top[e.P] = max(top[e.P], e.O)
			}
		}
		j.mu.Unlock()
		complete := true
		for p, o := range end {
			complete = complete && top[p] >= o
		}
		if complete {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopMembers()
	for _, m := range members {
		<-m.done
	}
	fetched, err := adm.FetchOffsets(ctx, *group)
	must(err, "FetchOffsets")
	committed := map[string]int64{}
	fetched.Each(func(o kadm.OffsetResponse) { committed[fmt.Sprint(o.Partition)] = o.At })
	described, err := adm.DescribeGroups(ctx, *group)
	must(err, "DescribeGroups")
	state := described[*group].State
	after := coordinator()
	for _, m := range members {
		m.cl.Close() // leaves the group
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return map[string]any{
		"acked": prod.acked, "produce_errors": prod.errors, "events": j.events, "committed": committed,
		"coordinator_before": before, "coordinator_after": after, "state": state, "read_before_crash": readBefore,
	}
}
