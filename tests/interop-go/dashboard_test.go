package interop

// monitoring/grafana-dashboard.json loaded with the Grafana Foundation SDK's
// dashboard model (github.com/grafana/grafana-foundation-sdk/go, pinned in
// go.mod), strictly: an unknown or mistyped field fails, and a re-marshalled
// round trip must keep every field. Then the checks Grafana itself does not
// make at import: the Prometheus input, data source references, queries,
// layout, panel ids and template variables. No server is needed.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

const (
	dashboardPath = "../../monitoring/grafana-dashboard.json"
	gridColumns   = 24
	promPlugin    = "prometheus"
	promInput     = "DS_PROMETHEUS"
)

func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range dashboardVerdict(raw) {
		t.Errorf("%s: %s", dashboardPath, problem)
	}
}

// dashboardVerdict lists what is wrong with the dashboard export raw.
func dashboardVerdict(raw []byte) []string {
	file, err := loadDashboard(raw)
	if err != nil {
		return []string{"does not load as a Grafana dashboard: " + err.Error()}
	}
	if len(file.queried) == 0 {
		return []string{"no panel has a query"}
	}
	return file.problems()
}

// exportInput is one entry of an exported dashboard's `__inputs`: what
// Grafana's import asks the user for.
type exportInput struct {
	Name        string `json:"name"`
	Label       string `json:"label"`
	Description string `json:"description"`
	Type        string `json:"type"`
	PluginID    string `json:"pluginId"`
	PluginName  string `json:"pluginName"`
}

// exportRequire is one entry of `__requires`.
type exportRequire struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// dashboardFile is the export Grafana's import reads: `__inputs` and
// `__requires` around the dashboard model.
type dashboardFile struct {
	raw      []byte
	inputs   []exportInput
	requires []exportRequire
	board    dashboard.Dashboard
	panels   []dashboard.Panel    // every non-row panel, row children included
	rows     []dashboard.RowPanel // the rows
	queried  []dashboard.Panel    // the panels that have targets
}

func loadDashboard(raw []byte) (*dashboardFile, error) {
	registerKinds()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	file := &dashboardFile{raw: raw}
	if err := strictJSON(top["__inputs"], &file.inputs); err != nil {
		return nil, fmt.Errorf("__inputs: %w", err)
	}
	if err := strictJSON(top["__requires"], &file.requires); err != nil {
		return nil, fmt.Errorf("__requires: %w", err)
	}
	delete(top, "__inputs")
	delete(top, "__requires")
	model, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	// Strict decoding finds unknown, mistyped and missing required fields,
	// but in this SDK version it also drops panels, targets and options it
	// found nothing wrong with: the model checked below is decoded the
	// lenient way, and the round trip shows it kept every field.
	var strict dashboard.Dashboard
	if err := sdkError(strict.UnmarshalJSONStrict(model)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(model, &file.board); err != nil {
		return nil, err
	}
	if err := sdkError(file.board.Validate()); err != nil {
		return nil, err
	}
	if err := keepsEveryField(model, file.board); err != nil {
		return nil, err
	}
	file.flatten()
	return file, nil
}

// sdkError is err, or nil for the empty error list that the SDK's strict
// decoding returns (a nil cog.BuildErrors in a non-nil error) when it found
// nothing wrong.
func sdkError(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}

// registerKinds tells the SDK the panel and query kinds the dashboard uses,
// so that their options and queries decode into their own types (strictly
// too). All of the SDK's (cog/plugins) would double the cold build; a
// panel of another kind is reported by kindProblems.
func registerKinds() {
	runtime := cog.NewRuntime()
	runtime.RegisterPanelcfgVariant(timeseries.VariantConfig())
	runtime.RegisterDataqueryVariant(prometheus.VariantConfig())
}

// strictJSON decodes raw (absent is empty) refusing unknown fields.
func strictJSON(raw json.RawMessage, into any) error {
	if raw == nil {
		return nil
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	return decoder.Decode(into)
}

// keepsEveryField re-marshals the decoded model and reports any field of
// the file that the model lost or changed on the way.
func keepsEveryField(model []byte, board dashboard.Dashboard) error {
	again, err := json.Marshal(board)
	if err != nil {
		return err
	}
	var before, after any
	if err := json.Unmarshal(model, &before); err != nil {
		return err
	}
	if err := json.Unmarshal(again, &after); err != nil {
		return err
	}
	var lost []string
	lostFields("", before, after, &lost)
	if len(lost) > 0 {
		return fmt.Errorf("the dashboard model loses or changes %s", strings.Join(lost, ", "))
	}
	return nil
}

// lostFields lists the paths of `before` that `after` lacks or differs in
// (fields `after` adds, such as defaults, and empty lists or objects it
// leaves out are not reported).
func lostFields(path string, before, after any, lost *[]string) {
	if after == nil && isEmpty(before) {
		return
	}
	switch b := before.(type) {
	case map[string]any:
		a, ok := after.(map[string]any)
		if !ok {
			*lost = append(*lost, path)
			return
		}
		for key, value := range b {
			lostFields(path+"."+key, value, a[key], lost)
		}
	case []any:
		a, ok := after.([]any)
		if !ok || len(a) != len(b) {
			*lost = append(*lost, path)
			return
		}
		for i := range b {
			lostFields(fmt.Sprintf("%s[%d]", path, i), b[i], a[i], lost)
		}
	default:
		if !reflect.DeepEqual(before, after) {
			*lost = append(*lost, path)
		}
	}
}

func isEmpty(value any) bool {
	switch v := value.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func (file *dashboardFile) flatten() {
	for _, item := range file.board.Panels {
		if item.RowPanel != nil {
			file.rows = append(file.rows, *item.RowPanel)
			file.panels = append(file.panels, item.RowPanel.Panels...)
		}
		if item.Panel != nil {
			file.panels = append(file.panels, *item.Panel)
		}
	}
	for _, panel := range file.panels {
		if len(panel.Targets) > 0 {
			file.queried = append(file.queried, panel)
		}
	}
}

func (file *dashboardFile) problems() []string {
	var problems []string
	problems = append(problems, file.inputProblems()...)
	problems = append(problems, file.kindProblems()...)
	problems = append(problems, file.idProblems()...)
	problems = append(problems, file.layoutProblems()...)
	problems = append(problems, file.queryProblems()...)
	problems = append(problems, file.variableProblems()...)
	return problems
}

var inputReference = regexp.MustCompile(`\$\{(DS_[A-Za-z0-9_]+)\}`)

// inputProblems: the import asks for a Prometheus data source
// (DS_PROMETHEUS), and every ${DS_...} in the file is an input it asks for.
func (file *dashboardFile) inputProblems() []string {
	var problems []string
	declared := map[string]bool{}
	for _, input := range file.inputs {
		declared[input.Name] = true
		if input.Name == promInput && (input.Type != "datasource" || input.PluginID != promPlugin) {
			problems = append(problems, fmt.Sprintf(
				"__inputs %s is a %q of plugin %q, not a %s datasource", promInput, input.Type, input.PluginID, promPlugin))
		}
	}
	if !declared[promInput] {
		problems = append(problems, "__inputs does not declare "+promInput+": the import cannot ask for the data source")
	}
	for _, match := range inputReference.FindAllSubmatch(file.raw, -1) {
		if name := string(match[1]); !declared[name] {
			problems = append(problems, fmt.Sprintf("${%s} is used but __inputs does not declare it", name))
			declared[name] = true
		}
	}
	return problems
}

func (file *dashboardFile) kindProblems() []string {
	var problems []string
	for _, panel := range file.panels {
		if _, known := cog.ConfigForPanelcfgVariant(panel.Type); !known {
			problems = append(problems, fmt.Sprintf(
				"panel %q is a %q panel, a kind this test does not register (add it to registerKinds)",
				deref(panel.Title), panel.Type))
		}
	}
	return problems
}

func (file *dashboardFile) idProblems() []string {
	var problems []string
	seen := map[uint32]string{}
	note := func(id uint32, title string) {
		if other, dup := seen[id]; dup {
			problems = append(problems, fmt.Sprintf("panels %q and %q share id %d", other, title, id))
		}
		seen[id] = title
	}
	for _, row := range file.rows {
		note(row.Id, "row "+deref(row.Title))
	}
	for _, panel := range file.panels {
		if panel.Id == nil {
			problems = append(problems, fmt.Sprintf("panel %q has no id", deref(panel.Title)))
			continue
		}
		note(*panel.Id, deref(panel.Title))
	}
	return problems
}

// placed is a panel's rectangle on the dashboard grid.
type placed struct {
	name string
	pos  *dashboard.GridPos
}

// layoutProblems: every panel has a place inside the 24 columns and no two
// top-level panels (rows included) overlap.
func (file *dashboardFile) layoutProblems() []string {
	var problems []string
	var top []placed
	for _, item := range file.board.Panels {
		if item.RowPanel != nil {
			top = append(top, placed{"row " + quoted(item.RowPanel.Title), item.RowPanel.GridPos})
			for _, child := range item.RowPanel.Panels {
				problems = append(problems, fitProblems(placed{"panel " + quoted(child.Title), child.GridPos})...)
			}
		}
		if item.Panel != nil {
			top = append(top, placed{"panel " + quoted(item.Panel.Title), item.Panel.GridPos})
		}
	}
	for i, panel := range top {
		problems = append(problems, fitProblems(panel)...)
		for _, other := range top[i+1:] {
			if overlap(panel.pos, other.pos) {
				problems = append(problems, fmt.Sprintf("%s at %s overlaps %s at %s",
					panel.name, where(panel.pos), other.name, where(other.pos)))
			}
		}
	}
	return problems
}

func fitProblems(panel placed) []string {
	switch pos := panel.pos; {
	case pos == nil:
		return []string{fmt.Sprintf("%s has no gridPos", panel.name)}
	case pos.W == 0 || pos.H == 0:
		return []string{fmt.Sprintf("%s at %s is empty", panel.name, where(pos))}
	case pos.X+pos.W > gridColumns:
		return []string{fmt.Sprintf("%s at %s reaches past the grid's %d columns", panel.name, where(pos), gridColumns)}
	}
	return nil
}

func overlap(a, b *dashboard.GridPos) bool {
	if a == nil || b == nil {
		return false
	}
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

func where(pos *dashboard.GridPos) string {
	if pos == nil {
		return "nowhere"
	}
	return fmt.Sprintf("x=%d y=%d w=%d h=%d", pos.X, pos.Y, pos.W, pos.H)
}

// promSources are the data source uids a query may name: a datasource
// variable of the Prometheus plugin, or a Prometheus input of the import.
func (file *dashboardFile) promSources() map[string]bool {
	sources := map[string]bool{}
	for _, variable := range file.board.Templating.List {
		if variable.Type == dashboard.VariableTypeDatasource && variableQuery(variable) == promPlugin {
			sources["${"+variable.Name+"}"] = true
		}
	}
	for _, input := range file.inputs {
		if input.Type == "datasource" && input.PluginID == promPlugin {
			sources["${"+input.Name+"}"] = true
		}
	}
	return sources
}

func (file *dashboardFile) sourceProblem(what string, ref *common.DataSourceRef, sources map[string]bool) []string {
	if ref == nil || deref(ref.Type) != promPlugin || !sources[deref(ref.Uid)] {
		var names []string
		for name := range sources {
			names = append(names, name)
		}
		sort.Strings(names)
		return []string{fmt.Sprintf("%s uses data source %s, not the Prometheus one (%s)",
			what, describeRef(ref), strings.Join(names, " or "))}
	}
	return nil
}

// queryProblems: every panel with targets, and every query variable, names
// the Prometheus data source; every target is a Prometheus query with an
// expression and a refId of its own.
func (file *dashboardFile) queryProblems() []string {
	var problems []string
	sources := file.promSources()
	for _, variable := range file.board.Templating.List {
		if variable.Type == dashboard.VariableTypeQuery {
			problems = append(problems, file.sourceProblem("variable $"+variable.Name, variable.Datasource, sources)...)
		}
	}
	for _, panel := range file.queried {
		name := "panel " + quoted(panel.Title)
		problems = append(problems, file.sourceProblem(name, panel.Datasource, sources)...)
		refIDs := map[string]bool{}
		for i, target := range panel.Targets {
			query, ok := target.(*prometheus.Dataquery)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s target %d is a %s query, not a %s one", name, i, target.DataqueryType(), promPlugin))
				continue
			}
			what := fmt.Sprintf("%s target %s", name, deref(query.RefId))
			if strings.TrimSpace(query.Expr) == "" {
				problems = append(problems, what+" has an empty expr")
			}
			if query.RefId == nil || refIDs[*query.RefId] {
				problems = append(problems, what+" has no refId of its own")
			} else {
				refIDs[*query.RefId] = true
			}
			if query.Datasource != nil {
				problems = append(problems, file.sourceProblem(what, query.Datasource, sources)...)
			}
		}
	}
	return problems
}

// variableUse matches $name, ${name}, ${name:format} and [[name]].
var variableUse = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]`)

func usedVariables(text string) []string {
	var names []string
	for _, match := range variableUse.FindAllStringSubmatch(text, -1) {
		name := match[1] + match[2] + match[3]
		// Grafana's own: $__rate_interval, $__interval, $__range, ...
		if !strings.HasPrefix(name, "__") {
			names = append(names, name)
		}
	}
	return names
}

// variableProblems: every variable an expr uses is declared, and a
// variable's query uses only variables declared before it (Grafana resolves
// them in order).
func (file *dashboardFile) variableProblems() []string {
	var problems []string
	declared := map[string]bool{}
	for _, variable := range file.board.Templating.List {
		for _, name := range usedVariables(variableQuery(variable)) {
			if !declared[name] {
				problems = append(problems, fmt.Sprintf("variable $%s's query uses $%s, not declared before it", variable.Name, name))
			}
		}
		declared[variable.Name] = true
	}
	for _, panel := range file.queried {
		for _, target := range panel.Targets {
			query, ok := target.(*prometheus.Dataquery)
			if !ok {
				continue
			}
			for _, name := range usedVariables(query.Expr) {
				if !declared[name] {
					problems = append(problems, fmt.Sprintf("panel %s target %s uses $%s, which templating does not declare",
						quoted(panel.Title), deref(query.RefId), name))
				}
			}
		}
	}
	return problems
}

func variableQuery(variable dashboard.VariableModel) string {
	if variable.Query == nil || variable.Query.String == nil {
		return ""
	}
	return *variable.Query.String
}

func describeRef(ref *common.DataSourceRef) string {
	if ref == nil {
		return "(none)"
	}
	return fmt.Sprintf("{type %q, uid %q}", deref(ref.Type), deref(ref.Uid))
}

func deref(text *string) string {
	if text == nil {
		return ""
	}
	return *text
}

func quoted(text *string) string {
	return fmt.Sprintf("%q", deref(text))
}
