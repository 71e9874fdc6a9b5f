{{/* Names, labels and the shared pieces of every gpulet pod. */}}
{{- define "gpulet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gpulet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpulet.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "gpulet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "gpulet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* selector labels of one component: (dict "root" $ "component" "device-plugin") */}}
{{- define "gpulet.selectorLabels" -}}
{{- if .root.Values.selectorLabelsOverride -}}
{{ toYaml .root.Values.selectorLabelsOverride }}
app.kubernetes.io/component: {{ .component }}
{{- else -}}
app.kubernetes.io/name: {{ include "gpulet.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end }}

{{- define "gpulet.image" -}}
{{- .Values.image.repository -}}:{{- .Values.image.tag | default .Chart.AppVersion -}}
{{- end }}

{{/* The plugin's config file: ConfigMap name ("" when none) and the key used as the file. */}}
{{- define "gpulet.configMapName" -}}
{{- if and .Values.config.name (not (empty .Values.config.map)) -}}
{{- fail "config.name and config.map are both set: use one (name: an existing ConfigMap; map: built by this chart)" -}}
{{- else if .Values.config.name -}}
{{- .Values.config.name -}}
{{- else if not (empty .Values.config.map) -}}
{{- printf "%s-configs" (include "gpulet.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/*
---- per-node configs (docs/reference/config-manager.md) ------------------------------------------------
"true" when the plugin, labels and MPS daemon follow the node label nvidia.com/device-plugin.config
themselves (gpulet's config-manager in-process: CONFIG_FILE_SRCDIR on the container): when
config.followNodeLabel says so, else (null) when the ConfigMap is config.name (its keys are the
cluster's) or config.map has several configs. "" otherwise: one config file for every node.
*/}}
{{- define "gpulet.nodeConfig" -}}
{{- $f := .Values.config.followNodeLabel -}}
{{- if and (typeIs "bool" $f) $f (not (include "gpulet.configMapName" .)) -}}
{{- fail "config.followNodeLabel is true, but there is no config to choose from: set config.map or config.name" -}}
{{- else if typeIs "bool" $f -}}
{{- if $f }}true{{ end -}}
{{- else if or .Values.config.name (gt (len .Values.config.map) 1) -}}
true
{{- end -}}
{{- end -}}

{{/* The one config file of every node (per-node configs off): config.default, else "default", else the only key. */}}
{{- define "gpulet.configKey" -}}
{{- $m := .Values.config.map -}}
{{- if .Values.config.default -}}
{{- if and (not (empty $m)) (not (hasKey $m .Values.config.default)) -}}
{{- fail (printf "config.default %q is not a key of config.map (keys: %s)" .Values.config.default (keys $m | sortAlpha | join ", ")) -}}
{{- end -}}
{{- .Values.config.default -}}
{{- else if or (empty $m) (hasKey $m "default") -}}
default
{{- else if eq (len $m) 1 -}}
{{- keys $m | first -}}
{{- else -}}
{{- fail (printf "config.map has several configs (%s) and config.followNodeLabel is false: set config.default to the config every node of this release uses" (keys $m | sortAlpha | join ", ")) -}}
{{- end -}}
{{- end -}}

{{/*
The config.map of per-node configs can serve a node without the label, as upstream's chart checks
(templates/validation.yml, hasDefaultConfig): config.default is one of its keys, or a fallback
strategy finds one (named: a key "default"; single: the only key; empty: no config file). An
external config.name cannot be checked (its keys are the cluster's).
*/}}
{{- define "gpulet.nodeConfigCheck" -}}
{{- $m := .Values.config.map -}}
{{- $fb := .Values.config.fallbackStrategies | default list -}}
{{- if and .Values.config.default (not (empty $m)) (not (hasKey $m .Values.config.default)) -}}
{{- fail (printf "config.default %q is not a key of config.map (keys: %s)" .Values.config.default (keys $m | sortAlpha | join ", ")) -}}
{{- end -}}
{{- if and (not (empty $m)) (not .Values.config.default) (not (or (and (has "named" $fb) (hasKey $m "default")) (and (has "single" $fb) (eq (len $m) 1)) (has "empty" $fb))) -}}
{{- fail (printf "config.map has several configs (%s) and none for a node without the nvidia.com/device-plugin.config label: set config.default, or config.fallbackStrategies (named: the key \"default\"; single: the only key; empty: no config file; now %v)" (keys $m | sortAlpha | join ", ") $fb) -}}
{{- end -}}
{{- end -}}

{{/* The config's env of the plugin, labels and MPS containers: per-node (the label chooses) or one file. */}}
{{- define "gpulet.configEnv" -}}
{{- if include "gpulet.nodeConfig" . -}}
{{- include "gpulet.nodeConfigCheck" . -}}
# per-node configs: the node label nvidia.com/device-plugin.config names one of /config's files
# (upstream's config-manager's env); the container follows it live (docs/reference/config-manager.md);
# NODE_NAME comes with the component's API access (gpulet.nodeNameEnv)
- name: CONFIG_FILE_SRCDIR
  value: /config
- name: DEFAULT_CONFIG
  value: {{ .Values.config.default | quote }}
- name: FALLBACK_STRATEGIES
  value: {{ join "," (.Values.config.fallbackStrategies | default list) | quote }}
{{- else if include "gpulet.configMapName" . -}}
- name: CONFIG_FILE
  value: /config/{{ include "gpulet.configKey" . }}
{{- end }}
{{- end -}}

{{/* ---- end of per-node configs -------------------------------------------------------------------------- */}}

{{/* Container security context: the user's, or no capabilities, read-only root, no escalation. */}}
{{- define "gpulet.containerSecurityContext" -}}
{{- if . -}}
{{ toYaml . }}
{{- else -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}
{{- end -}}

{{/* Pod-level fields shared by every gpulet DaemonSet: (dict "root" $ "hostNetwork" BOOL "runtimeClassName" NAME
     ["nodeSelector" labels the DaemonSet needs on top of .Values.nodeSelector]
     ["component" its app.kubernetes.io/component: its ServiceAccount (gpulet.apiRules) and pause labels
      (gpulet.deployLabels)]) */}}
{{- define "gpulet.podCommon" -}}
{{- $v := .root.Values -}}
{{- $api := hasKey (include "gpulet.apiRules" .root | fromYaml) (.component | default "") -}}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .hostNetwork }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- if $api }}
# its own ServiceAccount with the least rules its features need (gpulet.apiRules, rbac.yaml), and its token
serviceAccountName: {{ include "gpulet.fullname" .root }}-{{ .component }}
automountServiceAccountToken: true
{{- else }}
# this verb does not call the API server: no service-account token in the pod
automountServiceAccountToken: false
{{- end }}
securityContext:
  {{- if $v.podSecurityContext }}
  {{- toYaml $v.podSecurityContext | nindent 2 }}
  {{- else }}
  # every syscall of plugin, labels, exporter and doctor is inside the runtime's default profile
  seccompProfile:
    type: RuntimeDefault
  {{- end }}
{{- with merge (dict) (.nodeSelector | default dict) ($v.nodeSelector | default dict) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with include "gpulet.podAffinity" . | fromYaml }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Env for the nvidia runtime: it injects the GPU device nodes and libnvidia-ml into the pod. */}}
{{- define "gpulet.runtimeEnv" -}}
- name: NVIDIA_VISIBLE_DEVICES
  value: all
- name: NVIDIA_DRIVER_CAPABILITIES
  value: {{ .caps }}
# lets NVML in the pod read MIG memory (upstream issue #399). Always set, not only when a MIG
# strategy is configured as upstream does: MIG can be enabled on a running node and gpulet
# re-advertises the new layout live.
- name: NVIDIA_MIG_MONITOR_DEVICES
  value: all
{{- end -}}

{{/* prometheus.io scrape annotations for a metrics port */}}
{{- define "gpulet.scrapeAnnotations" -}}
{{- if .root.Values.metrics.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* ServiceMonitor for a component's headless Service: (dict "root" $ "component" NAME) */}}
{{- define "gpulet.serviceMonitor" -}}
{{- $sm := .root.Values.metrics.serviceMonitor -}}
{{- if $sm.enabled }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "gpulet.fullname" .root }}-{{ .component }}
  namespace: {{ include "gpulet.namespace" .root }}
  labels:
    {{- include "gpulet.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $sm.additionalLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "gpulet.selectorLabels" (dict "root" .root "component" .component) | nindent 6 }}
  endpoints:
    - port: metrics
      interval: {{ $sm.interval }}
      honorLabels: {{ $sm.honorLabels }}
      {{- if eq .component "exporter" }}
      # The exporter writes pod/namespace/container of the pod that holds each GPU; the target's own
      # (the exporter pod's) are dropped, so a GPU no pod holds has none instead of the exporter's
      # namespace, and the exporter's arrive unrenamed (docs/reference/alerts.md, "Labels").
      relabelings:
        - action: labeldrop
          regex: (pod|namespace|container)
      {{- if $sm.exportedLabels }}
      # and copied to exported_pod/exported_namespace/exported_container, the names dcgm-exporter's
      # chart (honorLabels: false, no relabeling) gives them: queries written for it keep working
      metricRelabelings:
        {{- range list "pod" "namespace" "container" }}
        - sourceLabels: [{{ . }}]
          targetLabel: exported_{{ . }}
        {{- end }}
      {{- end }}
      {{- end }}
      {{- with include "gpulet.webScrape" (dict "root" .root "component" .component) | trim }}
      {{- . | nindent 6 }}
      {{- end }}
{{- end }}
{{- end -}}

{{/*
recursiveReadOnly of the read-only host mounts of the plugin and the doctor (docs/reference/helm-chart.md
§4): hostMounts.recursiveReadOnly when set, else IfPossible where the API has the field (Kubernetes
>= 1.30: alpha behind a gate there, which drops it; beta 1.31, stable 1.33), else "" (no field).
Not Enabled by default: kubelet then refuses to start the pod where the runtime cannot (containerd
before 2.0), and the plugin would be gone from every such node.
*/}}
{{- define "gpulet.recursiveReadOnly" -}}
{{- if .Values.hostMounts.recursiveReadOnly -}}
{{- .Values.hostMounts.recursiveReadOnly -}}
{{- else if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version -}}
IfPossible
{{- end -}}
{{- end -}}

{{/*
The host's /dev below /host/dev, read-only, and an empty read-only volume over each of
hostMounts.devMasks (the host's /dev/shm, /dev/pts: writable submounts a read-only bind that is not
recursive leaves writable); volume mounts, then volumes.
*/}}
{{- define "gpulet.devMounts" -}}
{{- $rro := include "gpulet.recursiveReadOnly" . -}}
- name: host-dev
  mountPath: /host/dev
  readOnly: true
  {{- with $rro }}
  recursiveReadOnly: {{ . }}
  {{- end }}
{{- range .Values.hostMounts.devMasks }}
- {name: host-dev-masked, mountPath: {{ printf "/host%s" . | quote }}, readOnly: true}
{{- end }}
{{- end -}}

{{- define "gpulet.devVolumes" -}}
- {name: host-dev, hostPath: {path: /dev, type: Directory}}
{{- if .Values.hostMounts.devMasks }}
- {name: host-dev-masked, emptyDir: {sizeLimit: 1Mi}}
{{- end }}
{{- end -}}

{{/*
The doctor's host view: each host path its checks read (`gpulet doctor --list` names the inputs),
mounted read-only at /host<path>; a YAML list of {name, path, type}. Derived from the code, as the
plugin's mounts are: tests/integration/test_helm.py runs the doctor on a fake node copied through
exactly these paths and wants the same findings as on the whole node.
type: Directory / File where every node running kubelet has the path; DirectoryOrCreate /
FileOrCreate where a node may lack it (k3s/RKE2 have no /etc/containerd nor /var/lib/kubelet/config.yaml,
RPM nodes no /var/lib/dpkg): kubelet then creates it empty, as for the plugin's optional dirs, and
the pod starts. Left out on purpose (docs/security.md): /var/lib/kubelet/pods (other pods' secrets)
and pki/, /etc/rancher (the join token), /proc/<pid> (other processes' roots and environment), the
systemd unit dirs under /etc and /run and kubelet's env files (they only name kubelet's --root-dir),
/var/log unless doctor.kernelLog (other pods' logs).
*/}}
{{- define "gpulet.doctorMounts" -}}
{{- $droot := .Values.nvidiaDriverRoot | default "/" | clean -}}
# driver: libnvidia-ml and the files CDI specs name (libraries, binaries, firmware, ICDs), the
# runtime's BinaryName (/usr/bin, /usr/local/nvidia/toolkit); systemd units under /usr/lib, /lib
- {name: host-usr, path: /usr, type: Directory}
- {name: host-lib, path: /lib, type: Directory}
# no type check: arm64 hosts may lack /lib64 (the runtime then creates an empty dir), as the plugin's
- {name: host-lib64, path: /lib64, type: ""}
{{- if ne $droot "/" }}
# the driver container's root (GPU Operator): NVIDIA_DRIVER_ROOT is read below /host
- {name: driver-root, path: {{ $droot | quote }}, type: Directory}
{{- end }}
# daemon sockets and ICD files CDI specs name (the plugin's spec mounts them when present)
- {name: host-persistenced, path: /run/nvidia-persistenced, type: DirectoryOrCreate}
- {name: host-fabricmanager, path: /run/nvidia-fabricmanager, type: DirectoryOrCreate}
- {name: host-opencl-vendors, path: /etc/OpenCL/vendors, type: DirectoryOrCreate}
- {name: host-vulkan, path: /etc/vulkan, type: DirectoryOrCreate}
# driver link: /proc/driver/nvidia (version, gpus), nvidia-caps mig-minors. Not the whole /proc: its
# /proc/<pid>/root and environ magic links would hand the pod the files (writable ones too: a bind's
# read-only flag does not reach another mount namespace) of every uid-0 process without capabilities,
# the plugin's /var/run/cdi among them; the running kubelet's --root-dir then comes from its unit
# files under /usr/lib and /lib and the sockets present
- {name: host-proc-driver, path: /proc/driver, type: Directory}
# /sys/module/nvidia (module loaded); NUMA of each GPU: /sys/bus/pci/devices/* link into /sys/devices
- {name: host-sys-module, path: /sys/module, type: Directory}
- {name: host-sys-bus-pci, path: /sys/bus/pci, type: Directory}
- {name: host-sys-devices, path: /sys/devices, type: Directory}
# devnode link (/dev/nvidia*, nvidia-caps, dri; CDI specs' device nodes): /dev is mounted by
# gpulet.devMounts, with its writable submounts masked
# toolkit and CDI links: package versions (nvidia-container-toolkit, containerd)
- {name: host-dpkg, path: /var/lib/dpkg, type: DirectoryOrCreate}
# runtime link: containerd's config.toml and the drop-ins its imports name (doctor.containerdConfig;
# never /etc/containerd whole: certs.d/ holds registry client keys), nvidia-container-runtime's mode
{{- range $i, $c := .Values.doctor.containerdConfig }}
- {name: host-containerd-{{ $i }}, path: {{ $c.path | quote }}, type: {{ $c.type }}}
{{- end }}
- {name: host-nvidia-container-runtime, path: /etc/nvidia-container-runtime, type: DirectoryOrCreate}
# cdi link: the spec dirs (CDI's defaults; /run/cdi is where /var/run/cdi points, and a
# cdi_spec_dirs entry may name either)
- {name: host-etc-cdi, path: /etc/cdi, type: DirectoryOrCreate}
- {name: host-var-run-cdi, path: /var/run/cdi, type: DirectoryOrCreate}
- {name: host-run-cdi, path: /run/cdi, type: DirectoryOrCreate}
# runtime link: kubelet's cgroupDriver (KubeletConfiguration)
- {name: host-kubelet-config, path: /var/lib/kubelet/config.yaml, type: FileOrCreate}
# kubelet, plugin, mig, alloc links: kubelet.sock, the plugins' sockets, kubelet_internal_checkpoint
- {name: host-device-plugins, path: /var/lib/kubelet/device-plugins, type: Directory}
# kubelet and alloc links: the PodResources socket (which pods hold which GPUs, with --live)
- {name: host-pod-resources, path: /var/lib/kubelet/pod-resources, type: Directory}
{{- if .Values.doctor.kernelLog }}
# kernel-log link: /var/log/kern.log (the directory: logrotate replaces the file)
- {name: host-var-log, path: /var/log, type: Directory}
{{- end }}
{{- end -}}

{{/*
The affinity of every DaemonSet: .Values.affinity, or with gpuNodeSelection=gpuPresent only nodes
labelled nvidia.com/gpu.present=true; each required term also wants a kubernetes.io/arch of
nodeArchitectures (the image's). A YAML map ({} for none).
*/}}
{{- define "gpulet.affinity" -}}
{{- $v := .Values -}}
{{- $aff := deepCopy ($v.affinity | default dict) -}}
{{- $terms := list -}}
{{- if eq $v.gpuNodeSelection "gpuPresent" -}}
{{- $terms = list (dict "matchExpressions" (list (dict "key" "nvidia.com/gpu.present" "operator" "In" "values" (list "true")))) -}}
{{- else -}}
{{- $terms = dig "nodeAffinity" "requiredDuringSchedulingIgnoredDuringExecution" "nodeSelectorTerms" list $aff -}}
{{- end -}}
{{- with $v.nodeArchitectures -}}
{{- $arch := dict "key" "kubernetes.io/arch" "operator" "In" "values" . -}}
{{- $out := list -}}
{{- range ($terms | default (list dict)) -}}
{{- $out = append $out (merge (dict "matchExpressions" (append (.matchExpressions | default list) $arch)) (omit . "matchExpressions")) -}}
{{- end -}}
{{- $terms = $out -}}
{{- end -}}
{{- if $terms -}}
{{- $na := deepCopy (get $aff "nodeAffinity" | default dict) -}}
{{- $_ := set $na "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" $terms) -}}
{{- $_ := set $aff "nodeAffinity" $na -}}
{{- end -}}
{{- toYaml $aff -}}
{{- end -}}

{{/*
The GPU Operator's pause protocol (docs/reference/helm-chart.md "Pause labels"): the node labels that
stop each component, as the Operator's own DaemonSets select on them (gpu-operator assets/state-*:
nodeSelector nvidia.com/gpu.deploy.<operand>: "true"). mig-manager (mig-parted
pkg/mig/reconfigure/reconfigure.go) sets them to paused-for-mig-change, the driver upgrade
(k8s-driver-manager cmd/driver-manager/main.go) to paused-for-driver-upgrade, or X_paused-for-driver-upgrade
over another pause, and false disables; "true", "" and no label at all run the pods (gpulet's chart runs
without the Operator too). The doctor has a label of its own and leaves with the device plugin (mig-manager
knows no doctor). A YAML map: component -> label keys.
*/}}
{{- define "gpulet.deployLabels" -}}
{{- if .Values.operatorPauseLabels -}}
device-plugin: [nvidia.com/gpu.deploy.device-plugin]
mps-control-daemon: [nvidia.com/gpu.deploy.device-plugin]
gpu-feature-discovery: [nvidia.com/gpu.deploy.gpu-feature-discovery]
exporter: [nvidia.com/gpu.deploy.dcgm-exporter]
doctor: [nvidia.com/gpu.deploy.gpulet-doctor, nvidia.com/gpu.deploy.device-plugin]
{{- end -}}
{{- end -}}

{{/* The values of a deploy label that stop the pods (see gpulet.deployLabels), a YAML list. */}}
{{- define "gpulet.pauseValues" -}}
["false", "paused-for-mig-change", "paused-for-driver-upgrade", "paused-for-mig-change_paused-for-driver-upgrade"]
{{- end -}}

{{/*
A DaemonSet's affinity: gpulet.affinity with, in every required term, a NotIn expression per deploy label
of its component (NotIn also admits a node without the label): (dict "root" $ "component" NAME).
*/}}
{{- define "gpulet.podAffinity" -}}
{{- $aff := include "gpulet.affinity" .root | fromYaml -}}
{{- $keys := get (include "gpulet.deployLabels" .root | fromYaml) (.component | default "") -}}
{{- if $keys -}}
{{- $stop := include "gpulet.pauseValues" .root | fromYamlArray -}}
{{- $pause := list -}}
{{- range $keys -}}
{{- $pause = append $pause (dict "key" . "operator" "NotIn" "values" $stop) -}}
{{- end -}}
{{- $terms := dig "nodeAffinity" "requiredDuringSchedulingIgnoredDuringExecution" "nodeSelectorTerms" list $aff -}}
{{- $out := list -}}
{{- range ($terms | default (list dict)) -}}
{{- $out = append $out (merge (dict "matchExpressions" (concat (.matchExpressions | default list) $pause)) (omit . "matchExpressions")) -}}
{{- end -}}
{{- $na := deepCopy (get $aff "nodeAffinity" | default dict) -}}
{{- $_ := set $na "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" $out) -}}
{{- $_ := set $aff "nodeAffinity" $na -}}
{{- end -}}
{{- toYaml $aff -}}
{{- end -}}

{{/*
What each feature that calls the API server needs, the least RBAC (docs/reference/helm-chart.md "RBAC"):
  nodeHealth (devicePlugin.nodeHealth): reads its Node once, applies the GPUHealthy condition on
    nodes/status, creates Events about the Node (src/plugin/node_health.c), which the API takes only in
    the namespace default (eventsNamespace: that Role is made there);
  nodeConfig (gpulet.nodeConfig, per-node configs): watches its own Node (fieldSelector metadata.name;
    RBAC cannot narrow a rule to one name, so get/list/watch of nodes) and creates a Warning Event on it
    when the config its label names is refused (src/nodeconfig/follow.c);
  nodeFeature (gfd.useNodeFeatureAPI not false): its NodeFeature object in its namespace (followed: list
    and watch of that one name), its own pod for the owner references (src/labels/nodefeature.c);
  readCluster (doctor.readCluster): reads this node, the pods on it and their events (src/doctor/cluster_live.c);
  podMeta (the exporter's exporter.kubernetes.enablePodLabels/enablePodUID, exporter.kubernetesVirtualGPUs):
    watches the pods of its node for their labels and UIDs (src/exporter/podmeta.c); the pods of one node
    (fieldSelector spec.nodeName) need a cluster-wide rule, as upstream's chart gives (clusterrole.yaml).
A YAML map: feature -> {cluster: [rules], namespaced: [rules], eventsNamespace: [rules]}, one resource a rule.
*/}}
{{- define "gpulet.apiFeatureRules" -}}
nodeHealth:
  cluster:
    - {apiGroups: [""], resources: [nodes], verbs: [get]}
    - {apiGroups: [""], resources: [nodes/status], verbs: [patch]}
  eventsNamespace:
    - {apiGroups: [""], resources: [events], verbs: [create]}
nodeConfig:
  cluster:
    - {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
  eventsNamespace:
    - {apiGroups: [""], resources: [events], verbs: [create]}
nodeFeature:
  namespaced:
    - {apiGroups: [nfd.k8s-sigs.io], resources: [nodefeatures], verbs: [get, list, watch, create, update]}
    - {apiGroups: [""], resources: [pods], verbs: [get]}
readCluster:
  cluster:
    - {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
    - {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
    - {apiGroups: [""], resources: [events], verbs: [list]}
podMeta:
  cluster:
    - {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
{{- end -}}

{{/* The features each component's pods run (only the enabled ones): component -> [feature], a YAML map. */}}
{{- define "gpulet.apiFeatures" -}}
{{- $v := .Values -}}
{{- $nc := include "gpulet.nodeConfig" . -}}
{{- $out := dict -}}
{{- if $v.devicePlugin.enabled -}}
{{- $f := list -}}
{{- if $v.devicePlugin.nodeHealth }}{{ $f = append $f "nodeHealth" }}{{ end -}}
{{- if $nc }}{{ $f = append $f "nodeConfig" }}{{ end -}}
{{- with $f }}{{ $_ := set $out "device-plugin" . }}{{ end -}}
{{- if $nc }}{{ $_ := set $out "mps-control-daemon" (list "nodeConfig") }}{{ end -}}
{{- end -}}
{{- if $v.gfd.enabled -}}
{{- $f := list -}}
{{- if ne $v.gfd.useNodeFeatureAPI false }}{{ $f = append $f "nodeFeature" }}{{ end -}}
{{- if $nc }}{{ $f = append $f "nodeConfig" }}{{ end -}}
{{- with $f }}{{ $_ := set $out "gpu-feature-discovery" . }}{{ end -}}
{{- end -}}
{{- if and $v.doctor.enabled $v.doctor.readCluster -}}
{{- $_ := set $out "doctor" (list "readCluster") -}}
{{- end -}}
{{- if and $v.exporter.enabled (include "gpulet.exporterWatchesPods" .) -}}
{{- $_ := set $out "exporter" (list "podMeta") -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
The components that call the API server and the rules of each: the union of its features' rules
(gpulet.apiFeatureRules), one rule per resource with the verbs of all (rbac.yaml makes one ServiceAccount,
and a ClusterRole and/or a Role in the release's namespace and in default, for each).
A YAML map: component -> {cluster: [rules], namespaced: [rules], eventsNamespace: [rules]}.
*/}}
{{- define "gpulet.apiRules" -}}
{{- $byFeature := include "gpulet.apiFeatureRules" . | fromYaml -}}
{{- $out := dict -}}
{{- range $comp, $features := include "gpulet.apiFeatures" . | fromYaml -}}
{{- $scopes := dict -}}
{{- range $features -}}
{{- range $scope, $rules := get $byFeature . -}}
{{- $have := get $scopes $scope | default list -}}
{{- range $rules -}}
{{- $new := . -}}
{{- $found := false -}}
{{- range $have -}}
{{- if and (eq (toJson .apiGroups) (toJson $new.apiGroups)) (eq (toJson .resources) (toJson $new.resources)) -}}
{{- $_ := set . "verbs" (concat .verbs $new.verbs | uniq) -}}
{{- $found = true -}}
{{- end -}}
{{- end -}}
{{- if not $found }}{{ $have = append $have (deepCopy $new) }}{{ end -}}
{{- end -}}
{{- $_ := set $scopes $scope $have -}}
{{- end -}}
{{- end -}}
{{- $_ := set $out $comp $scopes -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* NODE_NAME from the pod's node, for a component that calls the API server about its Node: (dict "root" $ "component" NAME) */}}
{{- define "gpulet.nodeNameEnv" -}}
{{- if hasKey (include "gpulet.apiFeatures" .root | fromYaml) .component -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
{{- end -}}
{{- end -}}

{{/* The nodes (lookup) the affinity and nodeSelector admit: a count, "" under helm template. */}}
{{- define "gpulet.matchingNodes" -}}
{{- with lookup "v1" "Node" "" "" -}}
{{- include "gpulet.countNodes" (dict "root" $ "nodes" (.items | default list)) -}}
{{- end -}}
{{- end -}}

{{/* How many of .nodes (Node objects) the required affinity terms (In, NotIn, Exists,
     DoesNotExist) and the nodeSelector admit: (dict "root" $ "nodes" LIST) */}}
{{- define "gpulet.countNodes" -}}
{{- $ := .root -}}
{{- $aff := include "gpulet.affinity" $ | fromYaml -}}
{{- $terms := dig "nodeAffinity" "requiredDuringSchedulingIgnoredDuringExecution" "nodeSelectorTerms" list $aff -}}
{{- $n := 0 -}}
{{- range .nodes -}}
{{- $labels := .metadata.labels | default dict -}}
{{- $ok := true -}}
{{- range $k, $want := ($.Values.nodeSelector | default dict) -}}
{{- if ne (toString (get $labels $k)) (toString $want) }}{{ $ok = false }}{{ end -}}
{{- end -}}
{{- if $terms -}}
{{- $any := false -}}
{{- range $terms -}}
{{- $all := true -}}
{{- range .matchExpressions -}}
{{- $has := hasKey $labels .key -}}
{{- $val := toString (get $labels .key) -}}
{{- if eq .operator "In" }}{{ if not (and $has (has $val .values)) }}{{ $all = false }}{{ end -}}
{{- else if eq .operator "NotIn" }}{{ if and $has (has $val .values) }}{{ $all = false }}{{ end -}}
{{- else if eq .operator "Exists" }}{{ if not $has }}{{ $all = false }}{{ end -}}
{{- else if eq .operator "DoesNotExist" }}{{ if $has }}{{ $all = false }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if $all }}{{ $any = true }}{{ end -}}
{{- end -}}
{{- if not $any }}{{ $ok = false }}{{ end -}}
{{- end -}}
{{- if $ok }}{{ $n = add1 $n }}{{ end -}}
{{- end -}}
{{- $n -}}
{{- end -}}

{{/* checksum/config of a pod: the chart's ConfigMap, or the data of an existing config.name (lookup;
     none under helm template), so that `helm upgrade` after an edit rolls the pods */}}
{{- define "gpulet.configChecksum" -}}
{{- if not (empty .Values.config.map) -}}
{{- include (print .Template.BasePath "/configmap.yaml") . | sha256sum -}}
{{- else if .Values.config.name -}}
{{- with lookup "v1" "ConfigMap" (include "gpulet.namespace" .) .Values.config.name -}}
{{- toJson .data | sha256sum -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The plugin's device-list strategy: deviceListStrategy when set, else cdi-cri where kubelet passes
the device-plugin API's CDI device names by default (Kubernetes >= 1.29; KEP-4009, beta in 1.29),
else upstream's envvar (docs/reference/helm-chart.md).
*/}}
{{- define "gpulet.deviceListStrategy" -}}
{{- if typeIs "string" .Values.deviceListStrategy -}}
{{- .Values.deviceListStrategy -}}
{{- else if semverCompare ">=1.29-0" .Capabilities.KubeVersion.Version -}}
cdi-cri
{{- else -}}
envvar
{{- end -}}
{{- end }}

{{/*
The web config of the exporter's and the doctor's endpoints (--web-config-file, exporter-toolkit's
format; the same keys under exporter and doctor: tlsServerConfig, basicAuth). Each helper takes
(dict "root" $ "component" "exporter"|"doctor").
*/}}
{{/* "true" when the component serves through a web config (HTTPS or basic auth), else "" */}}
{{- define "gpulet.webConfig" -}}
{{- $v := index .root.Values .component -}}
{{- if or $v.tlsServerConfig.enabled $v.basicAuth.users -}}true{{- end -}}
{{- end -}}

{{- define "gpulet.tlsSecret" -}}
{{- with (index .root.Values .component).tlsServerConfig.existingSecret -}}
{{- tpl . $.root -}}
{{- else -}}
{{- include "gpulet.fullname" .root }}-{{ .component }}-tls
{{- end -}}
{{- end -}}

{{/*
How a component's probes reach it: HTTPS when it serves TLS; a TCP check when kubelet cannot pass
(basic auth: kubelet's probes carry no password; client certificates: kubelet has none).
(dict "root" $ "component" NAME "path" PATH)
*/}}
{{- define "gpulet.webProbe" -}}
{{- $v := index .root.Values .component -}}
{{- $tls := $v.tlsServerConfig -}}
{{- if or $v.basicAuth.users (and $tls.enabled (has $tls.clientAuthType (list "RequireAnyClientCert" "RequireAndVerifyClientCert"))) }}
tcpSocket:
  port: metrics
{{- else }}
httpGet:
  path: {{ .path }}
  port: metrics
  {{- if $tls.enabled }}
  scheme: HTTPS
  {{- end }}
{{- end }}
{{- end -}}

{{/* The --web-config-file argument, and the mounts and volumes of the web config and certificate. */}}
{{- define "gpulet.webConfigArg" -}}
{{- if include "gpulet.webConfig" . }}
- --web-config-file=/etc/gpulet/web/web-config.yml
{{- end }}
{{- end -}}

{{- define "gpulet.webConfigMounts" -}}
{{- if include "gpulet.webConfig" . }}
- name: web-config
  mountPath: /etc/gpulet/web
  readOnly: true
{{- end }}
{{- if (index .root.Values .component).tlsServerConfig.enabled }}
- name: tls
  mountPath: /etc/gpulet/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "gpulet.webConfigVolumes" -}}
{{- if include "gpulet.webConfig" . }}
- name: web-config
  secret:
    secretName: {{ include "gpulet.fullname" .root }}-{{ .component }}-web-config
{{- end }}
{{- if (index .root.Values .component).tlsServerConfig.enabled }}
- name: tls
  secret:
    secretName: {{ include "gpulet.tlsSecret" . }}
{{- end }}
{{- end -}}

{{/*
A component's ServiceMonitor endpoint: HTTPS with the CA and name to verify (metrics.serviceMonitor.tlsConfig,
else the generated CA), the client certificate when one is required, basic auth with the scrape user.
*/}}
{{- define "gpulet.webScrape" -}}
{{- $v := index .root.Values .component -}}
{{- $tls := $v.tlsServerConfig -}}
{{- $secret := include "gpulet.tlsSecret" . -}}
{{- if $tls.enabled }}
scheme: https
tlsConfig:
  {{- with .root.Values.metrics.serviceMonitor.tlsConfig }}
  {{- toYaml . | nindent 2 }}
  {{- else }}
  {{- if not (or $tls.autoGenerated $tls.existingSecret $tls.ca) }}
  {{- fail (printf "metrics.serviceMonitor.tlsConfig is required with %s.tlsServerConfig and a certificate given in values without its ca: say how Prometheus verifies the %s (ca, serverName)" .component .component) }}
  {{- end }}
  ca:
    secret:
      name: {{ $secret }}
      key: {{ $tls.caFilename }}
  serverName: {{ include "gpulet.fullname" .root }}-{{ .component }}
  {{- if $tls.clientAuthType }}
  cert:
    secret:
      name: {{ $secret }}
      key: {{ $tls.certFilename }}
  keySecret:
    name: {{ $secret }}
    key: {{ $tls.keyFilename }}
  {{- end }}
  {{- end }}
{{- end }}
{{- if $v.basicAuth.users }}
basicAuth:
  username:
    name: {{ include "gpulet.fullname" .root }}-{{ .component }}-scrape-auth
    key: username
  password:
    name: {{ include "gpulet.fullname" .root }}-{{ .component }}-scrape-auth
    key: password
{{- end }}
{{- end -}}

{{/* "true" when the exporter watches this node's pods (pod labels, pod UIDs, virtual GPUs' per-pod values), else "" */}}
{{- define "gpulet.exporterWatchesPods" -}}
{{- $k := .Values.exporter.kubernetes -}}
{{- if or $k.enablePodLabels $k.enablePodUID .Values.exporter.kubernetesVirtualGPUs }}true{{ end -}}
{{- end -}}
