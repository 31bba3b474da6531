// Command kfake-peer starts franz-go's kfake (a fake Kafka cluster in Go) with a number of brokers on
// 127.0.0.1, prints its first broker's address as "listening on HOST:PORT" (then every broker's as
// "brokers on ..."), and serves until its standard input closes or it is sent SIGTERM or SIGINT.
//
// It is the kfake peer of the benchmarks (benchmarks/peers.py starts it); nothing else is in the process.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	brokers := flag.Int("brokers", 3, "brokers in the cluster")
	partitions := flag.Int("partitions", 4, "partitions of an auto-created topic or a CreateTopics of -1")
	blackhole := flag.Bool("blackhole", false, "accept produce requests without storing the records")
	flag.Parse()

	opts := []kfake.Opt{
		kfake.NumBrokers(*brokers),
		kfake.DefaultNumPartitions(*partitions),
		kfake.AllowAutoTopicCreation(),
	}
	if *blackhole {
		opts = append(opts, kfake.BlackholeProduce())
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	addresses := cluster.ListenAddrs()
	fmt.Printf("listening on %s\n", addresses[0])
	fmt.Printf("brokers on %s\n", strings.Join(addresses, ","))

	done := make(chan struct{}, 2)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; done <- struct{}{} }()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); done <- struct{}{} }()
	<-done
	cluster.Close()
}
