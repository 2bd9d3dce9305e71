{{- define "relayq.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "relayq.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "relayq.labels" -}}
{{ include "relayq.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Redis URL: the subchart's Service, or redis.url. */}}
{{- define "relayq.redisURL" -}}
{{- if .Values.redis.enabled -}}
{{- printf "redis://%s-redis:6379/0" .Release.Name -}}
{{- else -}}
{{- required "redis.url is required with redis.enabled false: the nodes share their shaping state through it" .Values.redis.url -}}
{{- end -}}
{{- end -}}

{{- define "relayq.adminSecret" -}}
{{- .Values.admin.existingSecret | default (printf "%s-admin" (include "relayq.fullname" .)) -}}
{{- end -}}

{{/* The peers' SMTP address for drains. */}}
{{- define "relayq.drainTo" -}}
{{- if .Values.drain.to -}}
{{- .Values.drain.to -}}
{{- else if .Values.proxyProtocol.trusted -}}
{{- fail "drain.to is required with proxyProtocol.trusted set: the SMTP listeners then refuse in-cluster connections, so a drain must go through the load balancer" -}}
{{- else -}}
{{- printf "%s-internal.%s.svc:%v" (include "relayq.fullname" .) .Release.Namespace .Values.ports.smtp -}}
{{- end -}}
{{- end -}}

{{/*
relayq.yaml: what the chart decides (listeners, queue, admin, cluster,
PROXY protocol, TLS and secret files), with .Values.config merged over it.
*/}}
{{- define "relayq.config" -}}
{{- $sub := dict "listen" (list (printf "0.0.0.0:%v" .Values.ports.smtp)) "proxy_protocol" (dict "trusted" .Values.proxyProtocol.trusted) -}}
{{- if .Values.tls.secretName -}}
{{- $_ := set $sub "tls" (dict "cert_file" "/etc/relayq/tls/tls.crt" "key_file" "/etc/relayq/tls/tls.key") -}}
{{- $_ := set $sub "tls_listen" (list (printf "0.0.0.0:%v" .Values.ports.smtps)) -}}
{{- end -}}
{{- if .Values.httpSubmission.enabled -}}
{{- $_ := set $sub "http_listen" (printf "0.0.0.0:%v" .Values.ports.http) -}}
{{- end -}}
{{- $cluster := dict "redis_url" (include "relayq.redisURL" .) "expected_nodes" (int .Values.replicaCount) -}}
{{- if .Values.redis.passwordSecret -}}
{{- $_ := set $cluster "redis_password_file" "/etc/relayq/redis/password" -}}
{{- end -}}
{{- if eq .Values.drain.mode "onStop" -}}
{{- $_ := set $cluster "drain_on_stop" true -}}
{{- $_ := set $cluster "drain_to" (include "relayq.drainTo" .) -}}
{{- end -}}
{{- $base := dict "submission" $sub "cluster" $cluster
  "queue" (dict "path" "/var/lib/relayq/queue.db")
  "admin" (dict "listen" (printf "0.0.0.0:%v" .Values.ports.admin))
  "shutdown_timeout" (printf "%vs" .Values.shutdownTimeoutSeconds) -}}
{{- if .Values.bounces.enabled -}}
{{- $_ := set $base "bounces" (dict "listen" (list (printf "0.0.0.0:%v" .Values.ports.bounces)) "proxy_protocol" (dict "trusted" .Values.proxyProtocol.bouncesTrusted)) -}}
{{- end -}}
{{- toYaml (mustMergeOverwrite $base (deepCopy .Values.config)) -}}
{{- end -}}
