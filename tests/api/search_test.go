package api

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hyperfleet/hyperfleet/resource"
)

func TestSearch(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		mk := func(name, body string) resource.Resource {
			return e.do("POST", base+"/clusters", body).expect(201).resource()
		}
		a := mk("alpha", `{"kind":"Cluster","name":"alpha","labels":{"environment":"production","cost-center":"eng","hyperfleet.io/tier":"gold"},
			"spec":{"platform":{"type":"gcp","gcp":{"region":"us-central1","subnets":[{"cidr":"10.0.1.0/24"}]}},"nodes":5,"ha":true}}`)
		mid := time.Now().UTC()
		// Not a wait for a condition: bravo's created_time must be later
		// than mid by more than a stored timestamp's rounding.
		time.Sleep(10 * time.Millisecond)
		b := mk("bravo", `{"kind":"Cluster","name":"bravo","labels":{"environment":"dev"},"spec":{"platform":{"type":"aws"},"nodes":2,"ha":false}}`)
		mk("charlie", `{"kind":"Cluster","name":"charlie","labels":{"environment":"staging"},"spec":{"nodes":"many"}}`)
		e.report(a, report("validation", 1, "True")).expect(201)
		e.report(a, report("landing-zone", 1, "True")).expect(201)
		e.do("PATCH", b.Href, `{"spec":{"platform":{"type":"aws"},"nodes":3,"ha":false}}`).expect(200)
		e.do("DELETE", b.Href, nil).expect(202)
		np := e.createNodePool(a.ID, "pool")

		cases := map[string]string{
			"name='alpha'":                        "alpha",
			"name != 'alpha'":                     "bravo charlie",
			"name in ('alpha', 'charlie')":        "alpha charlie",
			"name in ['bravo']":                   "bravo",
			"name like 'al%'":                     "alpha",
			"name like '%a%' and name like '%l%'": "alpha charlie",
			"not (name = 'alpha')":                "bravo charlie",
			"name not in ('alpha')":               "bravo charlie",
			"id = '" + a.ID + "'":                 "alpha",
			"generation > 1":                      "bravo",
			"generation = 1":                      "alpha charlie",
			"generation >= 1 and generation <= 2": "alpha charlie",
			"created_time < '" + mid.Format(time.RFC3339Nano) + "'":                "alpha",
			"created_time >= '" + mid.Format(time.RFC3339Nano) + "'":               "bravo charlie",
			"updated_time > '2000-01-01'":                                          "alpha bravo charlie",
			"deleted_time > '2000-01-01'":                                          "bravo",
			"created_by = 'system@hyperfleet.local'":                               "alpha bravo charlie",
			"updated_by like 'system@%'":                                           "alpha bravo charlie",
			"labels.environment='production'":                                      "alpha",
			"labels.environment='dev' or labels.environment='staging'":             "bravo charlie",
			"labels.environment in ('dev', 'production')":                          "alpha bravo",
			"labels['cost-center'] = 'eng'":                                        "alpha",
			"labels.hyperfleet.io/tier = 'gold'":                                   "alpha",
			"labels.environment != 'dev'":                                          "alpha charlie",
			"labels.missing != 'x'":                                                "alpha bravo charlie",
			"labels.missing = 'x'":                                                 "",
			"spec.platform.type = 'gcp'":                                           "alpha",
			"spec.platform.gcp.region like 'us-%'":                                 "alpha",
			"spec.platform.gcp.subnets[0].cidr = '10.0.1.0/24'":                    "alpha",
			"spec.nodes > 2":                                                       "alpha bravo",
			"spec.nodes <= 3":                                                      "bravo",
			"spec.nodes = 'many'":                                                  "charlie",
			"spec.ha = true":                                                       "alpha",
			"spec.ha = false":                                                      "bravo",
			"status.conditions.Ready = 'True'":                                     "alpha",
			"status.conditions.Ready != 'True'":                                    "bravo charlie",
			"status.conditions.Ready = 'False' and labels.environment = 'staging'": "charlie",
			"status.conditions.ValidationSuccessful = 'True'":                      "alpha",
			"status.conditions.Available in ('True')":                              "alpha",
			"(labels.environment = 'dev' or name = 'alpha') and generation < 2":    "alpha",
		}
		for q, want := range cases {
			var l resource.List[resource.Resource]
			e.do("GET", base+"/clusters?size=100&search="+urlQuery(q), nil).expect(200).into(&l)
			var got []string
			for _, it := range l.Items {
				got = append(got, it.Name)
			}
			sort.Strings(got)
			if strings.Join(got, " ") != want || int(l.Total) != len(got) {
				t.Errorf("search %q = %q (total %d), want %q", q, strings.Join(got, " "), l.Total, want)
			}
		}

		var l resource.List[resource.Resource]
		e.do("GET", base+"/nodepools?search="+urlQuery("owner_references.id = '"+a.ID+"' and name = 'pool'"), nil).expect(200).into(&l)
		if l.Total != 1 || l.Items[0].ID != np.ID {
			t.Errorf("node pool search = %+v", l)
		}

		for _, q := range []string{
			"name = ", "name === 'a'", "bogus = 'x'", "name ~= 'a'", "name is null", "generation between 1 and 2",
			"generation = 'x'", "name = 3", "labels.cost-center = 'x'", "status.conditions.Ready = 'yes'",
			"created_time > 'soon'", "spec = 'x'", "'alpha' = name", "len(name) > 2", "name = 'a' or", strings.Repeat("x", 5000),
		} {
			p := e.do("GET", base+"/clusters?search="+urlQuery(q), nil).problem(400, "HYPERFLEET-VAL-004")
			if !p.names("search") {
				t.Errorf("search %q: problem names %v", q, p.fields())
			}
		}
	})
}

// SQL smuggled through search, order and ids must be refused or treated as
// plain data: nothing leaks, nothing changes.
func TestSQLInjection(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.createCluster("victim")
		attacks := []string{
			"name = 'x' or 1=1",
			"name = 'x'' or ''1''=''1'",
			"name = 'x'; DROP TABLE resources; --",
			"name = ''; DELETE FROM resources; --'",
			"labels.env = 'x'') OR 1=1 --'",
			"labels['x\") or 1=1 --'] = 'y'",
			"spec.a = '1' union select * from adapter_statuses",
			"spec['a;drop table resources'] = 'x'",
			"status.conditions.Ready'--' = 'True'",
			"name like '%' or id like '%'",
			"1 = 1",
		}
		for _, q := range attacks {
			res := e.do("GET", base+"/clusters?search="+urlQuery(q), nil)
			switch res.status {
			case 400:
				res.problem(400, "HYPERFLEET-VAL-004")
			case 200:
				var l resource.List[resource.Resource]
				res.into(&l)
				if l.Total != 0 && q != "name like '%' or id like '%'" {
					t.Errorf("search %q matched %d clusters", q, l.Total)
				}
			default:
				t.Errorf("search %q = %d: %s", q, res.status, res.body)
			}
		}
		for _, o := range []string{"name; DROP TABLE resources", "name desc, (select 1)", "created_time desc--", "name`"} {
			e.do("GET", base+"/clusters?order="+urlQuery(o), nil).problem(400, "HYPERFLEET-VAL-003")
			e.do("GET", base+"/clusters?orderBy="+urlQuery(o), nil).problem(400, "HYPERFLEET-VAL-003")
		}
		e.do("GET", base+"/clusters/"+urlQuery("x' or '1'='1"), nil).problem(404, "HYPERFLEET-NTF-001")
		e.do("POST", base+"/clusters", `{"kind":"Cluster","name":"ok-name","spec":{"q":"'; DROP TABLE resources; --"},"labels":{"a":"b"}}`).expect(201)

		var l resource.List[resource.Resource]
		e.do("GET", base+"/clusters", nil).expect(200).into(&l)
		if l.Total != 2 {
			t.Errorf("after the attacks %d clusters exist, want 2", l.Total)
		}
	})
}

// grepLines keeps the lines of text that contain what.
func grepLines(text, what string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, what) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
