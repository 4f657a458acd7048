package interop

// TestGrafanaDashboardChecksCatchBreakage breaks a copy of the real
// dashboard in the ways TestGrafanaDashboard guards against and expects
// each to be reported.

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// jsonObject is a decoded JSON object, edited in place.
type jsonObject = map[string]any

type breakage struct {
	name  string
	want  string // a part of the problem reported
	apply func(board jsonObject, a, b jsonObject)
}

var breakages = []breakage{
	{"unknown panel field", "unexpected field 'targts'", func(_, a, _ jsonObject) {
		a["targts"] = a["targets"]
	}},
	{"mistyped gridPos", "gridPos", func(_, a, _ jsonObject) {
		a["gridPos"].(jsonObject)["w"] = "12"
	}},
	{"no annotations", "annotations: required field is missing", func(board, _, _ jsonObject) {
		delete(board, "annotations")
	}},
	{"a panel kind not registered", "a kind this test does not register", func(_, a, _ jsonObject) {
		a["type"] = "stat"
	}},
	{"overlapping panels", "overlaps", func(_, a, b jsonObject) {
		b["gridPos"] = a["gridPos"]
	}},
	{"wider than the grid", "reaches past the grid's 24 columns", func(_, a, _ jsonObject) {
		a["gridPos"].(jsonObject)["x"] = 18.0
	}},
	{"duplicate panel id", "share id", func(_, a, b jsonObject) {
		b["id"] = a["id"]
	}},
	{"panel with another data source", "uses data source", func(_, a, _ jsonObject) {
		a["datasource"].(jsonObject)["uid"] = "P1809F7CD0C75ACF3"
	}},
	{"target with another data source", "uses data source", func(_, a, _ jsonObject) {
		target(a)["datasource"] = jsonObject{"type": "loki", "uid": "${datasource}"}
	}},
	{"empty expr", "has an empty expr", func(_, a, _ jsonObject) {
		target(a)["expr"] = " "
	}},
	{"undeclared variable", "uses $broker, which templating does not declare", func(_, a, _ jsonObject) {
		expr := target(a)["expr"].(string)
		target(a)["expr"] = strings.ReplaceAll(expr, "$node", "$broker")
	}},
	{"no import input", "__inputs does not declare DS_PROMETHEUS", func(board, _, _ jsonObject) {
		delete(board, "__inputs")
	}},
}

func TestGrafanaDashboardChecksCatchBreakage(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, test := range breakages {
		var board jsonObject
		if err := json.Unmarshal(raw, &board); err != nil {
			t.Fatal(err)
		}
		a, b := twoQueriedPanels(t, board)
		test.apply(board, a, b)
		broken, err := json.Marshal(board)
		if err != nil {
			t.Fatal(err)
		}
		problems := strings.Join(dashboardVerdict(broken), "\n")
		t.Logf("%s: %s", test.name, problems)
		if !strings.Contains(problems, test.want) {
			t.Errorf("%s: want a problem with %q, got %q", test.name, test.want, problems)
		}
	}
}

// twoQueriedPanels returns the first two panels that have targets.
func twoQueriedPanels(t *testing.T, board jsonObject) (jsonObject, jsonObject) {
	var found []jsonObject
	for _, item := range board["panels"].([]any) {
		if panel := item.(jsonObject); panel["targets"] != nil {
			found = append(found, panel)
		}
	}
	if len(found) < 2 {
		t.Fatalf("%s has fewer than two panels with targets", dashboardPath)
	}
	return found[0], found[1]
}

func target(panel jsonObject) jsonObject {
	return panel["targets"].([]any)[0].(jsonObject)
}
