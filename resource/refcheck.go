package resource

import (
	"fmt"
	"regexp"
	"strings"
)

// idPattern is what a resource id may hold: the API writes UUIDs, and
// ids stored before (or by upstream) are names of the same alphabet.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Validate checks a reference that crossed a process boundary (a
// workflow's input or signal, an adapter run's event): a kind and ids of
// the API's alphabets, and a path, when set, that is the API's own path of
// that resource. Workers call only what it names, with their credentials,
// so a reference someone else wrote must not lead them anywhere else.
func (r Ref) Validate() error {
	if !kindPattern.MatchString(r.Kind) {
		return fmt.Errorf("resource reference: kind %q is not a kind name (a capital letter, then letters and digits)", truncate(r.Kind))
	}
	if !idPattern.MatchString(r.ID) {
		return fmt.Errorf("resource reference: id %q is not a resource id (letters, digits, '.', '_', '-')", truncate(r.ID))
	}
	if r.ParentID != "" && !idPattern.MatchString(r.ParentID) {
		return fmt.Errorf("resource reference: parent id %q is not a resource id", truncate(r.ParentID))
	}
	if r.ParentKind != "" && !kindPattern.MatchString(r.ParentKind) {
		return fmt.Errorf("resource reference: parent kind %q is not a kind name", truncate(r.ParentKind))
	}
	if r.Path != "" {
		if err := checkPath(r.Path, r.ID, r.ParentID); err != nil {
			return fmt.Errorf("resource reference: path %q: %w", truncate(r.Path), err)
		}
	}
	return nil
}

// checkPath accepts only the API's path of a resource: the base path, then
// /<plural>/<id> once, or twice for a child, ending with the resource's id
// (after its parent's, for a child).
func checkPath(path, id, parentID string) error {
	rest, ok := strings.CutPrefix(path, BasePath+"/")
	if !ok {
		return fmt.Errorf("not under %s", BasePath)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 && len(parts) != 4 {
		return fmt.Errorf("want %s/<plural>/<id>, or a child's /<plural>/<id>/<plural>/<id>", BasePath)
	}
	for i := 0; i < len(parts); i += 2 {
		if !pluralPattern.MatchString(parts[i]) {
			return fmt.Errorf("%q is not a kind's plural", parts[i])
		}
	}
	if parts[len(parts)-1] != id {
		return fmt.Errorf("it ends in %q, not the resource's id", parts[len(parts)-1])
	}
	if len(parts) == 4 && parts[1] != parentID {
		return fmt.Errorf("its parent is %q, not the resource's parent", parts[1])
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
