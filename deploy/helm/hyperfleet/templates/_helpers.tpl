{{- define "hyperfleet.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hyperfleet.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "hyperfleet.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "hyperfleet.apiURL" -}}
http://{{ include "hyperfleet.fullname" . }}-api:{{ .Values.api.service.port }}
{{- end -}}

{{/* Temporal connection settings shared by the API and every worker.
Anyone who can start or signal a workflow on Temporal can make the workers
act, so an unauthenticated connection must be asked for by name. */}}
{{- define "hyperfleet.temporalEnv" -}}
{{- if not (or .Values.temporal.tls.enabled .Values.temporal.apiKeySecret.name .Values.temporal.insecure) }}
{{- fail "temporal: neither tls.enabled (mutual TLS with tls.secretName) nor apiKeySecret.name is set, so anyone who reaches Temporal could start or signal HyperFleet's workflows; set one, or temporal.insecure: true to connect without authentication (docs/operator-guide.md, \"Temporal\")" }}
{{- end }}
- name: HYPERFLEET_TEMPORAL_ADDRESS
  value: {{ required "temporal.address is required: the Temporal frontend host:port" .Values.temporal.address | quote }}
- name: HYPERFLEET_TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: HYPERFLEET_LOG_FORMAT
  value: json
- name: HYPERFLEET_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- if .Values.temporal.tls.enabled }}
- name: HYPERFLEET_TEMPORAL_TLS
  value: "true"
{{- with .Values.temporal.tls.serverName }}
- name: HYPERFLEET_TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if .Values.temporal.tls.secretName }}
- name: HYPERFLEET_TEMPORAL_TLS_CA
  value: /etc/hyperfleet/temporal-tls/ca.crt
- name: HYPERFLEET_TEMPORAL_TLS_CERT
  value: /etc/hyperfleet/temporal-tls/tls.crt
- name: HYPERFLEET_TEMPORAL_TLS_KEY
  value: /etc/hyperfleet/temporal-tls/tls.key
{{- end }}
{{- end }}
{{- if .Values.temporal.apiKeySecret.name }}
- name: HYPERFLEET_TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.temporal.apiKeySecret.name }}
      key: {{ .Values.temporal.apiKeySecret.key }}
{{- end }}
{{- end -}}

{{- /* Tracing: the OTLP endpoint and this process's service.name; nothing
when tracing.endpoint is empty. Called with (dict "root" $ "service" name). */}}
{{- define "hyperfleet.tracingEnv" -}}
{{- with .root.Values.tracing }}
{{- if .endpoint }}
- name: HYPERFLEET_OTEL_ENDPOINT
  value: {{ .endpoint | quote }}
- name: HYPERFLEET_OTEL_SERVICE_NAME
  value: {{ $.service | quote }}
{{- with .extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "hyperfleet.temporalVolumeMounts" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName }}
- name: temporal-tls
  mountPath: /etc/hyperfleet/temporal-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "hyperfleet.temporalVolumes" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tls.secretName }}
{{- end }}
{{- end -}}

{{- /* The reconciler's build id: its version of the Temporal worker deployment. */}}
{{- define "hyperfleet.buildID" -}}
{{- .Values.reconciler.buildId | default (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- /* The build id as a name part and label value (hook mode): what of it
fits [a-z0-9-], and a hash of the whole, so two build ids that differ only
in what was replaced or cut (v1.4.2 and v1-4-2) never share a Deployment. */}}
{{- define "hyperfleet.buildSlug" -}}
{{- $b := include "hyperfleet.buildID" . -}}
{{- if not $b }}
{{- fail "reconciler.rollout hook needs a build id to name the version and its Deployment: set image.tag or reconciler.buildId (or use reconciler.rollout: rolling for unversioned workers)" }}
{{- end }}
{{- $s := regexReplaceAll "[^a-z0-9]+" ($b | lower) "-" | trunc 24 | trimAll "-" -}}
{{- if $s }}{{ $s }}-{{ end }}{{ $b | sha256sum | trunc 8 }}
{{- end -}}
