package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	gormlogger "gorm.io/gorm/logger"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver (shared with the embedded Temporal server)

	"github.com/hyperfleet/hyperfleet/apiserver/search"
	"github.com/hyperfleet/hyperfleet/resource"
)

// Backends.
const (
	BackendPostgres = "postgres"
	BackendSQLite   = "sqlite"
)

// Config selects and tunes a backend.
type Config struct {
	// Driver is "postgres" or "sqlite".
	Driver string
	// URL is a PostgreSQL connection string, or the path of the SQLite file.
	URL             string
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	// SlowQuery logs statements slower than this at warn level.
	SlowQuery time.Duration
	Logger    zerolog.Logger
	// Kinds builds each resource's href and owner reference; the default
	// kinds when nil.
	Kinds *resource.Kinds
}

type gormStore struct {
	db      *gorm.DB
	sqlDB   *sql.DB
	backend string
	log     zerolog.Logger
	kinds   *resource.Kinds
}

// Open connects to the configured backend and checks it answers. It does
// not migrate: call Migrate.
func Open(ctx context.Context, cfg Config) (Store, error) {
	gcfg := &gorm.Config{
		SkipDefaultTransaction: true,
		Logger:                 &queryLogger{log: cfg.Logger, slow: cfg.SlowQuery},
		NowFunc:                func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	}
	var (
		db  *gorm.DB
		err error
	)
	switch cfg.Driver {
	case BackendPostgres:
		if cfg.URL == "" {
			return nil, errors.New("store: the postgres driver needs a database URL (--db-url or HYPERFLEET_DB_URL)")
		}
		db, err = gorm.Open(postgres.Open(cfg.URL), gcfg)
	case BackendSQLite:
		if cfg.URL == "" {
			return nil, errors.New("store: the sqlite driver needs a file path (--db-url or HYPERFLEET_DB_URL)")
		}
		if dir := filepath.Dir(cfg.URL); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("store: create directory for %s: %w", cfg.URL, err)
			}
		}
		conn, oerr := sql.Open("sqlite", sqliteDSN(cfg.URL))
		if oerr != nil {
			return nil, fmt.Errorf("store: open sqlite %s: %w", cfg.URL, oerr)
		}
		db, err = gorm.Open(sqlite.Dialector{DriverName: "sqlite", Conn: conn}, gcfg)
	default:
		return nil, fmt.Errorf("store: unknown database driver %q; use postgres or sqlite", cfg.Driver)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", cfg.Driver, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	maxOpen := cfg.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = 20
	}
	sqlDB.SetMaxOpenConns(maxOpen)
	if cfg.MaxIdleConns > 0 {
		sqlDB.SetMaxIdleConns(cfg.MaxIdleConns)
	} else {
		sqlDB.SetMaxIdleConns(maxOpen)
	}
	if cfg.ConnMaxLifetime > 0 {
		sqlDB.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	}
	kinds := cfg.Kinds
	if kinds == nil {
		kinds = resource.Defaults()
	}
	s := &gormStore{db: db, sqlDB: sqlDB, backend: cfg.Driver, log: cfg.Logger, kinds: kinds}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Ping(pingCtx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", cfg.Driver, err)
	}
	return s, nil
}

// sqliteDSN turns a file path into a modernc DSN: WAL for concurrent
// readers, IMMEDIATE transactions so a read-modify-write never deadlocks on
// lock upgrade, foreign keys for cascades, case-sensitive LIKE like
// PostgreSQL, and one fixed time format so stored times compare as text.
func sqliteDSN(path string) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)", "case_sensitive_like(1)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	return "file:" + path + "?" + q.Encode()
}

func (s *gormStore) Dialect() search.Dialect {
	if s.backend == BackendSQLite {
		return search.SQLite
	}
	return search.Postgres
}

func (s *gormStore) Backend() string { return s.backend }

func (s *gormStore) Ping(ctx context.Context) error { return s.sqlDB.PingContext(ctx) }

func (s *gormStore) SQLDB() *sql.DB { return s.sqlDB }

func (s *gormStore) Close() error { return s.sqlDB.Close() }

// jsonText is a JSON document column: jsonb on PostgreSQL, TEXT on SQLite.
type jsonText []byte

func (j jsonText) Value() (driver.Value, error) {
	if j == nil {
		return nil, nil
	}
	return string(j), nil
}

func (j *jsonText) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append((*j)[:0], v...)
	case string:
		*j = jsonText(v)
	default:
		return fmt.Errorf("store: cannot scan %T into JSON", src)
	}
	return nil
}

type resourceRow struct {
	ID          string `gorm:"primaryKey"`
	Kind        string
	ParentID    *string
	Name        string
	Generation  int64
	Spec        jsonText
	Labels      jsonText
	Conditions  jsonText
	Refs        jsonText
	CreatedTime time.Time
	UpdatedTime time.Time
	DeletedTime *time.Time
	CreatedBy   string
	UpdatedBy   string
	DeletedBy   string
}

func (resourceRow) TableName() string { return "resources" }

type statusRow struct {
	ResourceID         string `gorm:"primaryKey"`
	Adapter            string `gorm:"primaryKey"`
	ObservedGeneration int64
	ObservedTime       time.Time
	Conditions         jsonText
	Metadata           jsonText
	Data               jsonText
	CreatedTime        time.Time
	LastReportTime     time.Time
}

func (statusRow) TableName() string { return "adapter_statuses" }

type outboxRow struct {
	ID          int64 `gorm:"primaryKey;autoIncrement"`
	Kind        string
	ResourceID  string
	ParentID    string
	Generation  int64
	Reason      string
	CreatedTime time.Time
	TraceParent string
}

func (outboxRow) TableName() string { return "outbox" }

type settingRow struct {
	Key   string `gorm:"primaryKey"`
	Value string
}

func (settingRow) TableName() string { return "settings" }

// utc normalises times to what both backends store: UTC, microseconds.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func toRow(r *resource.Resource) (resourceRow, error) {
	labels, err := json.Marshal(nonNilLabels(r.Labels))
	if err != nil {
		return resourceRow{}, err
	}
	conds, err := json.Marshal(r.Status.Conditions)
	if err != nil {
		return resourceRow{}, err
	}
	refs, err := json.Marshal(toStoredLinks(r.References))
	if err != nil {
		return resourceRow{}, err
	}
	spec := r.Spec
	if len(spec) == 0 {
		spec = json.RawMessage("{}")
	}
	row := resourceRow{
		ID: r.ID, Kind: r.Kind, Name: r.Name, Generation: r.Generation,
		Spec: jsonText(spec), Labels: labels, Conditions: conds, Refs: refs,
		CreatedTime: utc(r.CreatedTime), UpdatedTime: utc(r.UpdatedTime),
		CreatedBy: r.CreatedBy, UpdatedBy: r.UpdatedBy, DeletedBy: r.DeletedBy,
	}
	if r.OwnerReferences != nil {
		parent := r.OwnerReferences.ID
		row.ParentID = &parent
	}
	if r.DeletedTime != nil {
		t := utc(*r.DeletedTime)
		row.DeletedTime = &t
	}
	return row, nil
}

func nonNilLabels(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}

func fromRow(kinds *resource.Kinds, row *resourceRow) (resource.Resource, error) {
	r := resource.Resource{
		Kind: row.Kind, ID: row.ID, Name: row.Name, Generation: row.Generation,
		Spec:        json.RawMessage(row.Spec),
		CreatedTime: row.CreatedTime.UTC(), UpdatedTime: row.UpdatedTime.UTC(),
		CreatedBy: row.CreatedBy, UpdatedBy: row.UpdatedBy, DeletedBy: row.DeletedBy,
	}
	if err := json.Unmarshal(row.Labels, &r.Labels); err != nil {
		return r, fmt.Errorf("decode labels of %s: %w", row.ID, err)
	}
	if err := json.Unmarshal(row.Conditions, &r.Status.Conditions); err != nil {
		return r, fmt.Errorf("decode conditions of %s: %w", row.ID, err)
	}
	if r.Status.Conditions == nil {
		r.Status.Conditions = []resource.Condition{}
	}
	if len(row.Refs) > 0 {
		var links []storedLink
		if err := json.Unmarshal(row.Refs, &links); err != nil {
			return r, fmt.Errorf("decode references of %s: %w", row.ID, err)
		}
		r.References = fromStoredLinks(kinds, links)
	}
	if row.DeletedTime != nil {
		t := row.DeletedTime.UTC()
		r.DeletedTime = &t
	}
	parentID := ""
	if row.ParentID != nil {
		parentID = *row.ParentID
	}
	r.OwnerReferences = kinds.Owner(row.Kind, parentID)
	r.Href = kinds.Href(row.Kind, row.ID, parentID)
	return r, nil
}

// storedLink is a link as the refs column keeps it: the target's parent
// rather than its href, which is rebuilt from the kinds table on read.
type storedLink struct {
	RefType  string `json:"ref_type"`
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	ParentID string `json:"parent_id,omitempty"`
}

func toStoredLinks(links []resource.Link) []storedLink {
	out := make([]storedLink, 0, len(links))
	for _, l := range links {
		out = append(out, storedLink{RefType: l.RefType, Kind: l.Kind, ID: l.ID, ParentID: parentFromHref(l.Href, l.ID)})
	}
	return out
}

// parentFromHref recovers a nested target's parent id from its href
// (.../<parent plural>/<parent id>/<plural>/<id>): the href is the one place
// a Link carries it.
func parentFromHref(href, id string) string {
	parts := strings.Split(strings.TrimPrefix(href, resource.BasePath+"/"), "/")
	if len(parts) < 4 || parts[len(parts)-1] != id {
		return ""
	}
	return parts[len(parts)-3]
}

func fromStoredLinks(kinds *resource.Kinds, links []storedLink) []resource.Link {
	if len(links) == 0 {
		return nil
	}
	out := make([]resource.Link, 0, len(links))
	for _, l := range links {
		out = append(out, resource.Link{RefType: l.RefType, Kind: l.Kind, ID: l.ID, Href: kinds.Href(l.Kind, l.ID, l.ParentID)})
	}
	return out
}

func toStatusRow(resourceID string, st *resource.AdapterStatus) (statusRow, error) {
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = utc(st.Conditions[i].LastTransitionTime)
	}
	conds, err := json.Marshal(st.Conditions)
	if err != nil {
		return statusRow{}, err
	}
	return statusRow{
		ResourceID: resourceID, Adapter: st.Adapter, ObservedGeneration: st.ObservedGeneration,
		ObservedTime: utc(st.ObservedTime), Conditions: conds,
		Metadata: nullableJSON(st.Metadata), Data: nullableJSON(st.Data),
		CreatedTime: utc(st.CreatedTime), LastReportTime: utc(st.LastReportTime),
	}, nil
}

func nullableJSON(raw json.RawMessage) jsonText {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return jsonText(raw)
}

func fromStatusRow(row *statusRow) (resource.AdapterStatus, error) {
	st := resource.AdapterStatus{
		Adapter: row.Adapter, ObservedGeneration: row.ObservedGeneration, ObservedTime: row.ObservedTime.UTC(),
		Metadata: json.RawMessage(row.Metadata), Data: json.RawMessage(row.Data),
		CreatedTime: row.CreatedTime.UTC(), LastReportTime: row.LastReportTime.UTC(),
	}
	if err := json.Unmarshal(row.Conditions, &st.Conditions); err != nil {
		return st, fmt.Errorf("decode conditions of %s/%s: %w", row.ResourceID, row.Adapter, err)
	}
	return st, nil
}

func (s *gormStore) GetResource(ctx context.Context, kind, id string) (*resource.Resource, error) {
	var row resourceRow
	db := s.db.WithContext(ctx).Where("id = ?", id)
	if kind != "" {
		db = db.Where("kind = ?", kind)
	}
	err := db.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", kind, id, err)
	}
	r, err := fromRow(s.kinds, &row)
	return &r, err
}

func (s *gormStore) ListResources(ctx context.Context, q ListQuery) ([]resource.Resource, int64, error) {
	db := s.db.WithContext(ctx).Model(&resourceRow{})
	if q.Kind != "" {
		db = db.Where("resources.kind = ?", q.Kind)
	}
	if q.ParentID != "" {
		db = db.Where("resources.parent_id = ?", q.ParentID)
	}
	if q.Where.SQL != "" {
		db = db.Where(q.Where.SQL, q.Where.Args...)
	}
	var total int64
	if err := db.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", q.Kind, err)
	}
	if total == 0 || int64(q.Offset) >= total {
		return []resource.Resource{}, total, nil
	}
	order := q.Order
	if len(order) == 0 {
		order = search.DefaultOrder
	}
	lastDesc := false
	for _, o := range order {
		db = db.Order(clause.OrderByColumn{Column: clause.Column{Table: "resources", Name: o.Column}, Desc: o.Desc})
		lastDesc = o.Desc
	}
	// id breaks ties so pages never overlap or skip.
	db = db.Order(clause.OrderByColumn{Column: clause.Column{Table: "resources", Name: "id"}, Desc: lastDesc})
	var rows []resourceRow
	if err := db.Offset(q.Offset).Limit(q.Limit).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", q.Kind, err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(s.kinds, &rows[i])
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, total, nil
}

func (s *gormStore) ListStatuses(ctx context.Context, resourceID string, offset, limit int) ([]resource.AdapterStatus, int64, error) {
	db := s.db.WithContext(ctx).Model(&statusRow{}).Where("resource_id = ?", resourceID)
	var total int64
	if err := db.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count statuses of %s: %w", resourceID, err)
	}
	var rows []statusRow
	if err := db.Order("adapter").Offset(offset).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list statuses of %s: %w", resourceID, err)
	}
	out, err := statusesFromRows(rows)
	return out, total, err
}

func statusesFromRows(rows []statusRow) ([]resource.AdapterStatus, error) {
	out := make([]resource.AdapterStatus, 0, len(rows))
	for i := range rows {
		st, err := fromStatusRow(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (s *gormStore) LiveResources(ctx context.Context, kind, afterID string, limit int) ([]resource.Resource, error) {
	var rows []resourceRow
	err := s.db.WithContext(ctx).Where("kind = ? AND id > ?", kind, afterID).Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("page %s after %q: %w", kind, afterID, err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(s.kinds, &rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *gormStore) LiveRefs(ctx context.Context, kind, afterID string, limit int) ([]LiveRef, error) {
	var rows []resourceRow
	err := s.db.WithContext(ctx).Select("id", "parent_id", "generation").Where("kind = ? AND id > ?", kind, afterID).Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("page %s ids after %q: %w", kind, afterID, err)
	}
	out := make([]LiveRef, 0, len(rows))
	for i := range rows {
		ref := LiveRef{ID: rows[i].ID, Generation: rows[i].Generation}
		if rows[i].ParentID != nil {
			ref.ParentID = *rows[i].ParentID
		}
		out = append(out, ref)
	}
	return out, nil
}

func (s *gormStore) CountResources(ctx context.Context, kind string) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&resourceRow{}).Where("kind = ?", kind).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count %s resources: %w", kind, err)
	}
	return n, nil
}

func (s *gormStore) InTx(ctx context.Context, fn func(Tx) error) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(&gormTx{db: tx, backend: s.backend, kinds: s.kinds})
	})
}

func (s *gormStore) OutboxBacklog(ctx context.Context) (int64, time.Time, error) {
	var n int64
	db := s.db.WithContext(ctx).Model(&outboxRow{})
	if err := db.Count(&n).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("count outbox: %w", err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	var first outboxRow
	if err := s.db.WithContext(ctx).Order("id").Limit(1).Find(&first).Error; err != nil {
		return 0, time.Time{}, fmt.Errorf("read oldest outbox entry: %w", err)
	}
	return n, first.CreatedTime.UTC(), nil
}

func (s *gormStore) PendingOutbox(ctx context.Context, limit int) ([]OutboxEntry, error) {
	var rows []outboxRow
	if err := s.db.WithContext(ctx).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	out := make([]OutboxEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, OutboxEntry{ID: r.ID, Kind: r.Kind, ResourceID: r.ResourceID, ParentID: r.ParentID,
			Generation: r.Generation, Reason: r.Reason, CreatedTime: r.CreatedTime.UTC(), TraceParent: r.TraceParent})
	}
	return out, nil
}

func (s *gormStore) AckOutbox(ctx context.Context, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Delete(&outboxRow{}).Error; err != nil {
		return fmt.Errorf("ack outbox: %w", err)
	}
	return nil
}

func (s *gormStore) GetSetting(ctx context.Context, key string) (string, bool, error) {
	var row settingRow
	err := s.db.WithContext(ctx).Where("key = ?", key).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("get setting %s: %w", key, err)
	}
	return row.Value, true, nil
}

func (s *gormStore) PutSetting(ctx context.Context, key, value string) error {
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "key"}},
		DoUpdates: clause.AssignmentColumns([]string{"value"}),
	}).Create(&settingRow{Key: key, Value: value}).Error
	if err != nil {
		return fmt.Errorf("put setting %s: %w", key, err)
	}
	return nil
}

type gormTx struct {
	db      *gorm.DB
	backend string
	kinds   *resource.Kinds
}

func (t *gormTx) LockResource(ctx context.Context, kind, id string) (*resource.Resource, error) {
	db := t.db.WithContext(ctx)
	if t.backend == BackendPostgres {
		db = db.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var row resourceRow
	err := db.Where("id = ? AND kind = ?", id, kind).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s %s: %w", kind, id, err)
	}
	r, err := fromRow(t.kinds, &row)
	return &r, err
}

func (t *gormTx) CreateResource(ctx context.Context, r *resource.Resource) error {
	row, err := toRow(r)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.Kind, r.Name, err)
	}
	if err := t.db.WithContext(ctx).Create(&row).Error; err != nil {
		if isUniqueViolation(err) {
			return ErrNameConflict
		}
		return fmt.Errorf("insert %s %s: %w", r.Kind, r.Name, err)
	}
	return nil
}

func (t *gormTx) UpdateResource(ctx context.Context, r *resource.Resource) error {
	row, err := toRow(r)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", r.Kind, r.ID, err)
	}
	res := t.db.WithContext(ctx).Model(&resourceRow{}).Where("id = ?", r.ID).Updates(map[string]any{
		"generation":   row.Generation,
		"spec":         row.Spec,
		"labels":       row.Labels,
		"conditions":   row.Conditions,
		"refs":         row.Refs,
		"updated_time": row.UpdatedTime,
		"updated_by":   row.UpdatedBy,
		"deleted_time": row.DeletedTime,
		"deleted_by":   row.DeletedBy,
	})
	if res.Error != nil {
		return fmt.Errorf("update %s %s: %w", r.Kind, r.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

func (t *gormTx) Children(ctx context.Context, parentID string) ([]resource.Resource, error) {
	db := t.db.WithContext(ctx)
	if t.backend == BackendPostgres {
		db = db.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var rows []resourceRow
	if err := db.Where("parent_id = ?", parentID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("children of %s: %w", parentID, err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(t.kinds, &rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

type referenceRow struct {
	ResourceID string `gorm:"primaryKey"`
	RefType    string `gorm:"primaryKey"`
	TargetID   string `gorm:"primaryKey"`
}

func (referenceRow) TableName() string { return "resource_references" }

func (t *gormTx) SetReferences(ctx context.Context, resourceID string, links []resource.Link) error {
	db := t.db.WithContext(ctx)
	if err := db.Where("resource_id = ?", resourceID).Delete(&referenceRow{}).Error; err != nil {
		return fmt.Errorf("clear references of %s: %w", resourceID, err)
	}
	if len(links) == 0 {
		return nil
	}
	rows := make([]referenceRow, 0, len(links))
	for _, l := range links {
		rows = append(rows, referenceRow{ResourceID: resourceID, RefType: l.RefType, TargetID: l.ID})
	}
	if err := db.Create(&rows).Error; err != nil {
		return fmt.Errorf("store references of %s: %w", resourceID, err)
	}
	return nil
}

func (t *gormTx) Referrers(ctx context.Context, targetIDs, excludeIDs []string, limit int) ([]resource.Resource, int64, error) {
	if len(targetIDs) == 0 {
		return nil, 0, nil
	}
	query := func() *gorm.DB {
		q := t.db.WithContext(ctx).Model(&resourceRow{}).Where("deleted_time IS NULL AND id IN (?)",
			t.db.Model(&referenceRow{}).Select("resource_id").Where("target_id IN ?", targetIDs))
		if len(excludeIDs) > 0 {
			q = q.Where("id NOT IN ?", excludeIDs)
		}
		return q
	}
	var total int64
	if err := query().Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count referrers: %w", err)
	}
	if total == 0 {
		return nil, 0, nil
	}
	var rows []resourceRow
	if err := query().Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list referrers: %w", err)
	}
	out := make([]resource.Resource, 0, len(rows))
	for i := range rows {
		r, err := fromRow(t.kinds, &rows[i])
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, total, nil
}

func (t *gormTx) CountChildren(ctx context.Context, parentID string) (int, error) {
	var n int64
	if err := t.db.WithContext(ctx).Model(&resourceRow{}).Where("parent_id = ?", parentID).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count children of %s: %w", parentID, err)
	}
	return int(n), nil
}

func (t *gormTx) Statuses(ctx context.Context, resourceID string) ([]resource.AdapterStatus, error) {
	var rows []statusRow
	if err := t.db.WithContext(ctx).Where("resource_id = ?", resourceID).Order("adapter").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("statuses of %s: %w", resourceID, err)
	}
	return statusesFromRows(rows)
}

func (t *gormTx) PutStatus(ctx context.Context, resourceID string, st resource.AdapterStatus) error {
	row, err := toStatusRow(resourceID, &st)
	if err != nil {
		return fmt.Errorf("encode status %s/%s: %w", resourceID, st.Adapter, err)
	}
	err = t.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "resource_id"}, {Name: "adapter"}},
		DoUpdates: clause.AssignmentColumns([]string{
			"observed_generation", "observed_time", "conditions", "metadata", "data", "created_time", "last_report_time",
		}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("upsert status %s/%s: %w", resourceID, st.Adapter, err)
	}
	return nil
}

func (t *gormTx) RemoveResource(ctx context.Context, id string) error {
	// Foreign keys cascade to node pools and all their statuses.
	if err := t.db.WithContext(ctx).Where("id = ?", id).Delete(&resourceRow{}).Error; err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	return nil
}

func (t *gormTx) AppendOutbox(ctx context.Context, e OutboxEntry) error {
	row := outboxRow{Kind: e.Kind, ResourceID: e.ResourceID, ParentID: e.ParentID, Generation: e.Generation,
		Reason: e.Reason, CreatedTime: utc(e.CreatedTime), TraceParent: e.TraceParent}
	if err := t.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("append outbox for %s %s: %w", e.Kind, e.ResourceID, err)
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// queryLogger routes gorm's logging to zerolog: failed statements at error
// (except "not found"; a unique violation, which the API answers with 409,
// at debug), slow ones at warn, the rest nowhere. Statements are logged
// with placeholders, never with their bound values: those are user data
// (a spec may hold secrets).
type queryLogger struct {
	log  zerolog.Logger
	slow time.Duration
}

func (l *queryLogger) LogMode(gormlogger.LogLevel) gormlogger.Interface { return l }
func (l *queryLogger) Info(context.Context, string, ...any)             {}
func (l *queryLogger) Warn(_ context.Context, msg string, args ...any) {
	l.log.Warn().Msgf(msg, args...)
}
func (l *queryLogger) Error(_ context.Context, msg string, args ...any) {
	l.log.Error().Msgf(msg, args...)
}

// ParamsFilter drops the bound values before gorm renders a statement for
// the log (gorm.ParamsFilter).
func (l *queryLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

// gormPlaceholder is how gorm renders a PostgreSQL placeholder it has no
// value for ($1 becomes $1$).
var gormPlaceholder = regexp.MustCompile(`\$(\d+)\$`)

func (l *queryLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	elapsed := time.Since(begin)
	statement := func() (string, int64) {
		sql, rows := fc()
		return gormPlaceholder.ReplaceAllString(sql, "$$$1"), rows
	}
	switch {
	case err != nil && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, context.Canceled):
		sql, rows := statement()
		ev := l.log.Error()
		switch {
		case isUniqueViolation(err):
			ev = l.log.Debug()
		case Classify(err) != FaultNone:
			// The database is down or full: the API answers 503/507 and
			// logs the request; this line only adds the statement.
			ev = l.log.Warn()
		}
		ev.Err(err).Dur("elapsed", elapsed).Int64("rows", rows).Str("sql", sql).Msg("query failed")
	case l.slow > 0 && elapsed > l.slow:
		sql, rows := statement()
		l.log.Warn().Dur("elapsed", elapsed).Int64("rows", rows).Str("sql", sql).Msg("slow query")
	}
}
