{{/*
Chart name, truncated to the 63 characters DNS labels allow.
*/}}
{{- define "verification-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: <release>-<chart>, or the release name when it already
contains the chart name; truncated to 63 characters.
*/}}
{{- define "verification-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "verification-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The image tag: image.tag, or the chart's appVersion.
*/}}
{{- define "verification-gateway.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion | toString }}
{{- end }}

{{/*
Full image reference: repository:tag, or repository:tag@digest when a digest is pinned.
*/}}
{{- define "verification-gateway.image" -}}
{{- $repository := required "image.repository is required: the registry path you pushed the gateway image to (built from this repository's Dockerfile), e.g. --set image.repository=registry.example.com/platform/verification-gateway" .Values.image.repository }}
{{- $tag := include "verification-gateway.imageTag" . }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" $repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{/*
Selector labels: stable for the lifetime of a release (a Deployment's selector is immutable).
*/}}
{{- define "verification-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ if eq (include "verification-gateway.component" .) "ledger-drainer" }}{{ include "verification-gateway.drainerLabel" . }}{{ else }}{{ include "verification-gateway.name" . }}{{ end }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
What a resource belongs to: `gateway`, or `ledger-drainer` for the drainer Deployment's (its
context carries `component`; deployment.yaml). The drainer's pods differ in
app.kubernetes.io/name, so that neither the gateway Deployment's immutable selector nor its
Service ever matches them.
*/}}
{{- define "verification-gateway.component" -}}
{{- if kindIs "map" . }}{{ get . "component" | default "gateway" }}{{ else }}gateway{{ end }}
{{- end }}

{{/*
The drainer pods' app.kubernetes.io/name: the chart's name + "-ledger-drainer", within a label
value's 63 characters.
*/}}
{{- define "verification-gateway.drainerLabel" -}}
{{- printf "%s-ledger-drainer" (include "verification-gateway.name" . | trunc 48 | trimSuffix "-") }}
{{- end }}

{{/*
The drainer Deployment's name (ledger.drainer.replicas > 0).
*/}}
{{- define "verification-gateway.drainerName" -}}
{{- printf "%s-ledger-drainer" (include "verification-gateway.fullname" . | trunc 48 | trimSuffix "-") }}
{{- end }}

{{/*
Both Deployments' pods (the NetworkPolicy's and the ServiceMonitor's selector): this release's
gateway pods and, when it runs, its ledger drainer's.
*/}}
{{- define "verification-gateway.allPodsSelector" -}}
matchExpressions:
  - key: app.kubernetes.io/name
    operator: In
    values:
      - {{ include "verification-gateway.name" . }}
      - {{ include "verification-gateway.drainerLabel" . }}
  - key: app.kubernetes.io/instance
    operator: In
    values:
      - {{ .Release.Name }}
{{- end }}

{{/*
Common labels for every resource.
*/}}
{{- define "verification-gateway.labels" -}}
helm.sh/chart: {{ include "verification-gateway.chart" . }}
{{ include "verification-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ include "verification-gateway.imageTag" . | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: {{ include "verification-gateway.component" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
ServiceAccount name.
*/}}
{{- define "verification-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "verification-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
A host:port list given as a string or as a list, rendered as "host:port,host:port".
Usage: include "verification-gateway.hostPortList" .Values.redis.sentinels
*/}}
{{- define "verification-gateway.hostPortList" -}}
{{- if kindIs "slice" . }}
{{- join "," . }}
{{- else if . }}
{{- . | toString | nospace }}
{{- end }}
{{- end }}

{{/*
The Redis sources configured in values, comma-separated (empty when none).
*/}}
{{- define "verification-gateway.redisSources" -}}
{{- $sources := list }}
{{- if .Values.redis.url }}
{{- $sources = append $sources "redis.url" }}
{{- end }}
{{- if .Values.redis.existingSecret }}
{{- $sources = append $sources "redis.existingSecret" }}
{{- end }}
{{- if include "verification-gateway.hostPortList" .Values.redis.sentinels }}
{{- $sources = append $sources "redis.sentinels" }}
{{- end }}
{{- if include "verification-gateway.hostPortList" .Values.redis.clusterNodes }}
{{- $sources = append $sources "redis.clusterNodes" }}
{{- end }}
{{- join "," $sources }}
{{- end }}

{{/*
The largest number of pods that may run at once (replicaCount, or the HPA's maxReplicas).
*/}}
{{- define "verification-gateway.maxReplicas" -}}
{{- if .Values.autoscaling.enabled }}
{{- .Values.autoscaling.maxReplicas | int }}
{{- else }}
{{- .Values.replicaCount | int }}
{{- end }}
{{- end }}

{{/*
The smallest number of pods normally running (replicaCount, or the HPA's minReplicas).
*/}}
{{- define "verification-gateway.minReplicas" -}}
{{- if .Values.autoscaling.enabled }}
{{- .Values.autoscaling.minReplicas | int }}
{{- else }}
{{- .Values.replicaCount | int }}
{{- end }}
{{- end }}

{{/*
Name of the Secret the chart creates (when it creates one).
*/}}
{{- define "verification-gateway.secretName" -}}
{{- include "verification-gateway.fullname" . }}
{{- end }}

{{/*
Secret holding the upstream credentials: the existing one, or the chart's.
*/}}
{{- define "verification-gateway.upstreamSecretName" -}}
{{- if .Values.upstream.credentials.existingSecret }}
{{- tpl .Values.upstream.credentials.existingSecret . }}
{{- else }}
{{- include "verification-gateway.secretName" . }}
{{- end }}
{{- end }}

{{/*
"true" when API keys are configured (an existing Secret, or entries in values).
*/}}
{{- define "verification-gateway.apiKeysEnabled" -}}
{{- if or .Values.apiKeys.existingSecret .Values.apiKeys.entries }}true{{ end }}
{{- end }}

{{/*
Secret holding the API keys JSON: the existing one, or the chart's.
*/}}
{{- define "verification-gateway.apiKeysSecretName" -}}
{{- if .Values.apiKeys.existingSecret }}
{{- tpl .Values.apiKeys.existingSecret . }}
{{- else }}
{{- include "verification-gateway.secretName" . }}
{{- end }}
{{- end }}

{{/*
"true" when JWT callers are configured.
*/}}
{{- define "verification-gateway.jwtEnabled" -}}
{{- if or .Values.jwt.jwksUrl .Values.jwt.publicKey }}true{{ end }}
{{- end }}

{{/*
"true" when the chart must create its own Secret: for the upstream credentials when no
existing Secret is named, and/or for API keys given as entries.
*/}}
{{- define "verification-gateway.createSecret" -}}
{{- if or (not .Values.upstream.credentials.existingSecret) (and (not .Values.apiKeys.existingSecret) .Values.apiKeys.entries) }}true{{ end }}
{{- end }}

{{/*
The preStop mode in effect: `auto` becomes the native `sleep` action on Kubernetes >= 1.30
(PodLifecycleSleepAction, beta and on by default since 1.30) and `exec` before that.
*/}}
{{- define "verification-gateway.preStopMode" -}}
{{- $mode := .Values.lifecycle.preStop.mode | default "none" }}
{{- if eq $mode "auto" }}
{{- if semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version }}sleep{{ else }}exec{{ end }}
{{- else }}
{{- $mode }}
{{- end }}
{{- end }}

{{/*
Checks of the whole configuration; fails the render with a message naming the value.
Included once, from the Deployment. Mirrors the gateway's own startup checks (which
would otherwise surface only as exit code 78 and a CrashLoopBackOff).
*/}}
{{- define "verification-gateway.validate" -}}
{{- /* Upstream */ -}}
{{- $baseUrl := required "upstream.baseUrl (UPSTREAM_BASE_URL) is required, e.g. --set upstream.baseUrl=https://verify.example.com" .Values.upstream.baseUrl }}
{{- if not (regexMatch "^https?://[^/]+" $baseUrl) }}
{{- fail (printf "upstream.baseUrl must be an http:// or https:// URL, got %q" $baseUrl) }}
{{- end }}
{{- if not .Values.upstream.credentials.existingSecret }}
{{- $_ := required "upstream.credentials.username is required when upstream.credentials.existingSecret is not set (pass it with --set-file or a values file kept out of git)" .Values.upstream.credentials.username }}
{{- $_ := required "upstream.credentials.password is required when upstream.credentials.existingSecret is not set (pass it with --set-file or a values file kept out of git)" .Values.upstream.credentials.password }}
{{- end }}
{{- /* Reuse: the gateway would stop at start without its key; said at render time instead */ -}}
{{- range $operation, $policy := .Values.reuse.operations }}
{{- if and (gt (int $policy.maxAgeSeconds) 0) (not $.Values.reuse.existingSecret) }}
{{- fail (printf "reuse.operations.%s allows reuse: reuse.existingSecret must name a Secret holding REUSE_HMAC_KEY (at least 32 bytes, the same on every replica)" $operation) }}
{{- end }}
{{- end }}
{{- /* Redis */ -}}
{{- $sources := compact (splitList "," (include "verification-gateway.redisSources" .)) }}
{{- if gt (len $sources) 1 }}
{{- fail (printf "configure only one Redis source (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES); these are set: %s" (join ", " $sources)) }}
{{- end }}
{{- if .Values.redis.url }}
{{- if not (regexMatch "^rediss?://.+" .Values.redis.url) }}
{{- fail "redis.url (REDIS_URL) must start with redis:// or rediss://" }}
{{- end }}
{{- if regexMatch "^rediss?://[^/@]*:[^/@]*@" .Values.redis.url }}
{{- fail "redis.url contains a password and would be stored in a ConfigMap: put the URL in a Secret and set redis.existingSecret (and redis.existingSecretKey) instead" }}
{{- end }}
{{- end }}
{{- if and (include "verification-gateway.hostPortList" .Values.redis.sentinels) (not .Values.redis.sentinelName) }}
{{- fail "redis.sentinelName (REDIS_SENTINEL_NAME) is required with redis.sentinels" }}
{{- end }}
{{- if and (eq (len $sources) 0) (gt (include "verification-gateway.maxReplicas" . | int) 1) }}
{{- fail (printf "no Redis is configured but up to %s replicas may run (replicaCount, or autoscaling.maxReplicas). Without Redis the gateway uses an in-process store that keeps idempotency keys, inquiry records and quotas per pod, which is only correct for ONE replica. Set one of redis.url, redis.existingSecret, redis.sentinels + redis.sentinelName, or redis.clusterNodes; or set replicaCount=1 (and autoscaling.enabled=false)." (include "verification-gateway.maxReplicas" .)) }}
{{- end }}
{{- $redisSettings := list }}
{{- if or .Values.redis.auth.username .Values.redis.auth.existingSecret .Values.redis.auth.sentinelUsername }}
{{- $redisSettings = append $redisSettings "redis.auth" }}
{{- end }}
{{- if or .Values.redis.tls.enabled .Values.redis.tls.existingSecret }}
{{- $redisSettings = append $redisSettings "redis.tls" }}
{{- end }}
{{- if and $redisSettings (eq (len $sources) 0) }}
{{- fail (printf "%s set but no Redis is configured (redis.url, redis.existingSecret, redis.sentinels or redis.clusterNodes)" (join " and " $redisSettings)) }}
{{- end }}
{{- if and .Values.redis.auth.sentinelPasswordKey (not (include "verification-gateway.hostPortList" .Values.redis.sentinels)) }}
{{- fail "redis.auth.sentinelPasswordKey is only used with redis.sentinels" }}
{{- end }}
{{- if and .Values.redis.auth.sentinelPasswordKey (not .Values.redis.auth.existingSecret) }}
{{- fail "redis.auth.sentinelPasswordKey needs redis.auth.existingSecret (the Secret holding it)" }}
{{- end }}
{{- if and .Values.redis.tls.existingSecret (not .Values.redis.tls.enabled) (not (regexMatch "^rediss://" (toString .Values.redis.url))) }}
{{- fail "redis.tls.existingSecret is set but TLS is off: set redis.tls.enabled=true" }}
{{- end }}
{{- if ne (empty .Values.redis.tls.certKey) (empty .Values.redis.tls.keyKey) }}
{{- fail "redis.tls.certKey and redis.tls.keyKey go together (a client certificate and its key)" }}
{{- end }}
{{- if and .Values.redis.tls.certKey (not .Values.redis.tls.existingSecret) }}
{{- fail "redis.tls.certKey needs redis.tls.existingSecret (the Secret holding the client certificate)" }}
{{- end }}
{{- if not (regexMatch "^[A-Za-z0-9_.-]{1,32}$" (toString .Values.redis.keyPrefix)) }}
{{- fail "redis.keyPrefix (REDIS_KEY_PREFIX) must be 1-32 of A-Z a-z 0-9 _ . -" }}
{{- end }}
{{- /* Ledger (after Redis: several replicas without Redis are reported first) */ -}}
{{- if gt (.Values.ledger.drainer.replicas | int) 0 }}
{{- if not .Values.ledger.existingSecret }}
{{- fail "ledger.drainer.replicas needs ledger.existingSecret: the drainer writes to the PostgreSQL the gateway pods read, and an embedded ledger is each pod's own" }}
{{- end }}
{{- if eq (len $sources) 0 }}
{{- fail "ledger.drainer.replicas needs Redis (redis.url, redis.existingSecret, redis.sentinels or redis.clusterNodes): the gateway pods queue their entries there for the drainer" }}
{{- end }}
{{- end }}
{{- if and (not .Values.ledger.existingSecret) (gt (include "verification-gateway.maxReplicas" . | int) 1) }}
{{- $egress := "" }}
{{- if and .Values.networkPolicy.enabled .Values.networkPolicy.egress.enabled }}
{{- $egress = " and networkPolicy.egress.postgres.to (the PostgreSQL pods or CIDRs: egress is restricted)" }}
{{- end }}
{{- fail (printf "no ledger database is configured but up to %s replicas may run (replicaCount, or autoscaling.maxReplicas). Without ledger.existingSecret each pod keeps its own embedded ledger (PGlite) in its memory: the entries are spread over the pods and lost with each pod, at every restart and rollout, while the ledger is kept for years. Set ledger.existingSecret (a Secret with the PostgreSQL URL under ledger.existingSecretKey, mounted as LEDGER_DATABASE_URL_FILE)%s; or set replicaCount=1 (and autoscaling.enabled=false)." (include "verification-gateway.maxReplicas" .) $egress) }}
{{- end }}
{{- /* Operations the operator adds (docs/api.md, "Operations the operator adds"); their shapes are values.schema.json's */ -}}
{{- $operations := list "shahkar" "iban" }}
{{- range $i, $operation := .Values.operations }}
{{- if has $operation.name $operations }}
{{- fail (printf "operations[%d].name: %q is already an operation (names are unique, and shahkar and iban are built in)" $i $operation.name) }}
{{- end }}
{{- $operations = append $operations $operation.name }}
{{- range $field, $spec := $operation.fields }}
{{- $at := printf "operations[%d].fields.%s" $i $field }}
{{- if has $field (list "trackId" "requestHandlingType") }}
{{- fail (printf "%s: %s is a field the gateway sets itself, not an operation's" $at $field) }}
{{- end }}
{{- $settings := omit $spec "type" "optional" | keys | sortAlpha }}
{{- $expected := get (dict "digits" (list "maxLength" "minLength") "text" (list "maxLength") "enum" (list "values")) $spec.type | default list }}
{{- if ne (join "," $settings) (join "," $expected) }}
{{- fail (printf "%s: a %s field takes %s" $at $spec.type (empty $expected | ternary "no settings" (join " and " $expected))) }}
{{- end }}
{{- if and (eq $spec.type "digits") (or (gt (int $spec.minLength) 64) (gt (int $spec.minLength) (int $spec.maxLength)) (gt (int $spec.maxLength) 64)) }}
{{- fail (printf "%s: minLength and maxLength of digits are 1-64, minLength at most maxLength" $at) }}
{{- end }}
{{- end }}
{{- end }}
{{- if .Values.operations }}
{{- range $operations }}
{{- if not (hasKey $.Values.budgets.prices .) }}
{{- fail (printf "budgets.prices.%s is required: with operations, INQUIRY_PRICES prices every operation, the built-ins and each added one ({standard, advanced} units)" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $_ := .Values.reuse.operations }}
{{- if not (has $name $operations) }}
{{- fail (printf "reuse.operations.%s: no such operation (the built-ins, or a name of operations)" $name) }}
{{- end }}
{{- end }}
{{- /* API keys */ -}}
{{- if and (not .Values.apiKeys.existingSecret) .Values.apiKeys.entries }}
{{- if not (kindIs "slice" .Values.apiKeys.entries) }}
{{- fail "apiKeys.entries must be a list of {clientId, keySha256, scopes}" }}
{{- end }}
{{- $allowedScopes := list "kyc:shahkar" "kyc:iban" "inquiries:read" "kyc:advanced" "ledger:read" "ledger:reconcile" }}
{{- range .Values.operations }}{{ $allowedScopes = append $allowedScopes (printf "kyc:%s" .name) }}{{ end }}
{{- $seen := dict }}
{{- range $i, $entry := .Values.apiKeys.entries }}
{{- if not (kindIs "map" $entry) }}
{{- fail (printf "apiKeys.entries[%d] must be a map with clientId, keySha256 and scopes" $i) }}
{{- end }}
{{- if not (regexMatch "^[A-Za-z0-9_.-]{1,64}$" (toString ($entry.clientId | default ""))) }}
{{- fail (printf "apiKeys.entries[%d].clientId must be 1-64 of A-Z a-z 0-9 _ . -" $i) }}
{{- end }}
{{- $hash := toString ($entry.keySha256 | default "") | lower }}
{{- if not (regexMatch "^[0-9a-f]{64}$" $hash) }}
{{- fail (printf "apiKeys.entries[%d].keySha256 must be the SHA-256 of the key as 64 hex digits (printf %%s \"$KEY\" | sha256sum), never the key itself" $i) }}
{{- end }}
{{- if hasKey $seen $hash }}
{{- fail (printf "apiKeys.entries[%d].keySha256: the same key is configured twice" $i) }}
{{- end }}
{{- $_ := set $seen $hash true }}
{{- if or (not (kindIs "slice" $entry.scopes)) (not $entry.scopes) }}
{{- fail (printf "apiKeys.entries[%d].scopes must be a non-empty list of: %s" $i (join ", " $allowedScopes)) }}
{{- end }}
{{- range $entry.scopes }}
{{- if not (has . $allowedScopes) }}
{{- fail (printf "apiKeys.entries[%d].scopes: unknown scope %q (allowed: %s)" $i . (join ", " $allowedScopes)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- /* JWT */ -}}
{{- if and .Values.jwt.jwksUrl .Values.jwt.publicKey }}
{{- fail "set either jwt.jwksUrl (JWT_JWKS_URL) or jwt.publicKey (JWT_PUBLIC_KEY), not both" }}
{{- end }}
{{- if .Values.jwt.jwksUrl }}
{{- if not (regexMatch "^https?://[^/]+" .Values.jwt.jwksUrl) }}
{{- fail "jwt.jwksUrl (JWT_JWKS_URL) must be an http:// or https:// URL" }}
{{- end }}
{{- end }}
{{- if include "verification-gateway.jwtEnabled" . }}
{{- $_ := required "jwt.issuer (JWT_ISSUER) is required when JWT is configured" .Values.jwt.issuer }}
{{- $_ := required "jwt.audience (JWT_AUDIENCE) is required when JWT is configured" .Values.jwt.audience }}
{{- end }}
{{- if not (or (include "verification-gateway.apiKeysEnabled" .) (include "verification-gateway.jwtEnabled" .)) }}
{{- fail "no callers are configured: set apiKeys.entries or apiKeys.existingSecret (API_KEYS_FILE), and/or jwt.jwksUrl or jwt.publicKey (with jwt.issuer and jwt.audience)" }}
{{- end }}
{{- /* Shutdown */ -}}
{{- $mode := include "verification-gateway.preStopMode" . }}
{{- if not (has $mode (list "exec" "sleep" "none")) }}
{{- fail (printf "lifecycle.preStop.mode must be auto, exec, sleep or none, got %q" $mode) }}
{{- end }}
{{- if and (eq $mode "sleep") (not (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version)) }}
{{- fail (printf "lifecycle.preStop.mode=sleep needs Kubernetes >= 1.30 (this cluster: %s); use auto or exec" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- $sleep := 0 }}
{{- if ne $mode "none" }}
{{- $sleep = .Values.lifecycle.preStop.sleepSeconds | int }}
{{- end }}
{{- /* The drain's bound (src/inquiry/inquiry-deadline.ts): an advanced inquiry's deadline,
  2 x advancedTimeoutMs + 4 x timeoutMs + 2 s of token wait, + the 2 s deadline margin; then
  three flushes of at most 5 s each (src/http/shutdown-sequence.ts): owed settlements, refusal
  counts, the ledger queue. */}}
{{- $timeoutMs := max (.Values.upstream.timeoutMs | int) 1 }}
{{- $advancedMs := max (.Values.upstream.advancedTimeoutMs | int) $timeoutMs }}
{{- $drainMs := add (mul 2 $advancedMs) (mul 4 $timeoutMs) 4000 15000 }}
{{- $drainSeconds := div (add $drainMs 999) 1000 }}
{{- if le (.Values.terminationGracePeriodSeconds | int) (add $sleep $drainSeconds | int) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be larger than lifecycle.preStop.sleepSeconds (%d) + the shutdown drain's bound, 2 x upstream.advancedTimeoutMs + 4 x upstream.timeoutMs + 19 s (%ds), or accepted inquiries are killed mid-call" (.Values.terminationGracePeriodSeconds | int) $sleep $drainSeconds) }}
{{- end }}
{{- end }}

{{/*
The TCP port of an http(s):// URL: its explicit port, else 443 (https) or 80 (http).
Usage: include "verification-gateway.urlPort" "https://verify.example.com:8443/x"
*/}}
{{- define "verification-gateway.urlPort" -}}
{{- $url := urlParse . }}
{{- $hostPort := regexFind ":[0-9]+$" $url.host }}
{{- if $hostPort }}{{ trimPrefix ":" $hostPort }}{{ else if eq $url.scheme "http" }}80{{ else }}443{{ end }}
{{- end }}

{{/*
Egress ports to the upstream and the JWKS endpoint: networkPolicy.egress.upstream.ports, or
derived from upstream.baseUrl and jwt.jwksUrl. A JSON list of numbers.
*/}}
{{- define "verification-gateway.upstreamPorts" -}}
{{- $ports := list }}
{{- if .Values.networkPolicy.egress.upstream.ports }}
{{- range .Values.networkPolicy.egress.upstream.ports }}{{ $ports = append $ports (int .) }}{{ end }}
{{- else }}
{{- with .Values.upstream.baseUrl }}{{ $ports = append $ports (include "verification-gateway.urlPort" . | int) }}{{ end }}
{{- with .Values.jwt.jwksUrl }}{{ $ports = append $ports (include "verification-gateway.urlPort" . | int) }}{{ end }}
{{- end }}
{{- $ports | uniq | sortAlpha | toJson }}
{{- end }}

{{/*
Egress ports to Redis: networkPolicy.egress.redis.ports, or derived from the configured
source: redis.url's port (6379 without one); every Sentinel's port plus 6379 for the data
nodes it hands out; every cluster seed node's port; 6379 for a URL kept in a Secret.
A JSON list of numbers.
*/}}
{{- define "verification-gateway.redisPorts" -}}
{{- $ports := list }}
{{- if .Values.networkPolicy.egress.redis.ports }}
{{- range .Values.networkPolicy.egress.redis.ports }}{{ $ports = append $ports (int .) }}{{ end }}
{{- else if .Values.redis.url }}
{{- $port := regexFind ":[0-9]+$" (urlParse .Values.redis.url).host }}
{{- $ports = append $ports (ternary (trimPrefix ":" $port) "6379" (ne $port "") | int) }}
{{- else }}
{{- $nodes := concat (splitList "," (include "verification-gateway.hostPortList" .Values.redis.sentinels)) (splitList "," (include "verification-gateway.hostPortList" .Values.redis.clusterNodes)) | compact }}
{{- range $nodes }}{{ $ports = append $ports (regexFind "[0-9]+$" . | int) }}{{ end }}
{{- if or (include "verification-gateway.hostPortList" .Values.redis.sentinels) .Values.redis.existingSecret }}
{{- $ports = append $ports 6379 }}
{{- end }}
{{- end }}
{{- $ports | uniq | sortAlpha | toJson }}
{{- end }}
