// Package promtest holds the tests of topicotel that serve its metrics to
// Prometheus, through the OpenTelemetry exporter: a module apart, so that
// topicotel's users do not get the Prometheus client in their module graph.
// It is not released.
package promtest

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/seedaa7df82c/topic"
	"github.com/seedaa7df82c/topic/internal/docscheck"
	"github.com/seedaa7df82c/topic/topicotel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// A broker registered on a MeterProvider whose reader is the Prometheus
// exporter is scraped with its losses and its logs: the exporter names a
// counter with the suffix _total, drops units in braces, and makes the
// dots of names and attributes underscores, as the guide's scrape shows.
func TestABrokerIsScrapedByPrometheus(t *testing.T) {
	var b topic.Broker
	defer b.Shutdown(context.Background())
	b.Subscribe(topic.Buffer[int](1), topic.Name[int]("dashboard"))
	b.Publish(1)
	b.Publish(2) // lost: the buffer holds one
	b.Retain[string](topic.Retention{Count: 100})
	b.Publish("retained")

	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer provider.Shutdown(context.Background())
	reg, err := topicotel.Register(&b, provider)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	srv := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if line := sc.Text(); strings.Contains(line, "topic_subscription_lost") || strings.Contains(line, "topic_log_kept") ||
			strings.Contains(line, "messaging_client_") {
			got = append(got, line)
		}
	}
	want := []string{
		"# HELP messaging_client_consumed_messages_total Number of messages that were delivered to the application.",
		"# TYPE messaging_client_consumed_messages_total counter",
		`messaging_client_consumed_messages_total{messaging_destination_name="int",messaging_destination_subscription_name="dashboard",messaging_operation_name="receive",messaging_operation_type="receive",messaging_system="topic"} 1`,
		"# HELP messaging_client_sent_messages_total Number of messages producer attempted to send to the broker.",
		"# TYPE messaging_client_sent_messages_total counter",
		`messaging_client_sent_messages_total{messaging_destination_name="int",messaging_operation_name="publish",messaging_operation_type="send",messaging_system="topic"} 2`,
		`messaging_client_sent_messages_total{messaging_destination_name="string",messaging_operation_name="publish",messaging_operation_type="send",messaging_system="topic"} 1`,
		"# HELP topic_log_kept The values the log keeps (a keyed log: the keys).",
		"# TYPE topic_log_kept gauge",
		`topic_log_kept{topic_log_keyed="false",topic_type="string"} 1`,
		"# HELP topic_subscription_lost_total The values the subscriptions lost, by cause.",
		"# TYPE topic_subscription_lost_total counter",
		`topic_subscription_lost_total{topic_cause="full",topic_subscription_name="dashboard",topic_type="int"} 1`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("scrape:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The blocks of the README and docs/ that serve topicotel's metrics to
// Prometheus (marked <!-- docs: module topicotel -->) compile against the
// tree.
func TestTheGuidesPrometheusBlocksCompile(t *testing.T) {
	guides, err := docscheck.Guides("../../..")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docscheck.Block
	for _, b := range guides {
		if b.Marker == "module topicotel" {
			b.Marker = "" // checked here
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		t.Fatal("neither the README nor docs/ has a block marked <!-- docs: module topicotel -->")
	}
	n := docscheck.Check(t, blocks, docscheck.Env{
		Imports: []string{
			"context", "log", "net/http",
			"github.com/prometheus/client_golang/prometheus",
			"github.com/prometheus/client_golang/prometheus/promhttp",
			"otelprom go.opentelemetry.io/otel/exporters/prometheus",
			"go.opentelemetry.io/otel/metric",
			"sdkmetric go.opentelemetry.io/otel/sdk/metric",
			"github.com/seedaa7df82c/topic",
			"github.com/seedaa7df82c/topic/topicotel",
		},
		Decls:  "var provider metric.MeterProvider\n",
		Locals: "var b topic.Broker\nctx := context.Background()\n",
	})
	t.Logf("%d blocks of the README and docs/ checked", n)
}
