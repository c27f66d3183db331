// Package metricstest reads Prometheus metrics back for tests: it parses the
// text exposition, as a scraper or a Pushgateway would, and looks samples up
// by name and labels.
package metricstest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Set is a parsed exposition: the metric families by name.
type Set map[string]*dto.MetricFamily

// Parse reads a text exposition.
func Parse(r io.Reader) (Set, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse the exposition: %w", err)
	}
	return fams, nil
}

// Gather encodes what g gathers in the text format and parses it back, so a
// test sees exactly what a scrape would.
func Gather(g prometheus.Gatherer) (Set, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, fmt.Errorf("encode %s: %w", mf.GetName(), err)
		}
	}
	return Parse(&b)
}

// Samples returns the values of the samples of name whose labels include
// want, summed by the values of the labels named in by (joined with a space;
// the key is "" when by is empty). It is empty when no sample matches.
func (s Set) Samples(name string, want map[string]string, by ...string) map[string]float64 {
	out := map[string]float64{}
	mf := s[name]
	if mf == nil {
		return out
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		key := make([]string, 0, len(by))
		for _, b := range by {
			key = append(key, have[b])
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		}
		out[strings.Join(key, " ")] += v
	}
	return out
}

// Value is the sum of the samples of name whose labels include want, and
// whether any matched.
func (s Set) Value(name string, want map[string]string) (float64, bool) {
	v, ok := s.Samples(name, want)[""]
	return v, ok
}

// GroupingLabels reads the job and grouping labels back from the path of a
// Pushgateway push (…/metrics/job/<job>/<label>/<value>…), whatever order the
// pusher put them in. Values encoded in base64 (label@base64) are decoded. ok
// is false when the path is not a push path.
func GroupingLabels(path string) (labels map[string]string, ok bool) {
	i := strings.LastIndex(path, "/metrics/job")
	if i < 0 {
		return nil, false
	}
	parts := strings.Split(strings.TrimPrefix(path[i:], "/metrics/"), "/")
	if len(parts)%2 != 0 {
		return nil, false
	}
	labels = map[string]string{}
	for j := 0; j < len(parts); j += 2 {
		name, value := parts[j], parts[j+1]
		if n, found := strings.CutSuffix(name, "@base64"); found {
			b, err := base64.RawURLEncoding.DecodeString(value)
			if err != nil {
				return nil, false
			}
			name, value = n, string(b)
		} else if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		labels[name] = value
	}
	return labels, true
}
