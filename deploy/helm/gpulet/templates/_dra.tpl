{{/* gpulet dra needs resource.k8s.io/v1 (Kubernetes 1.34): said at render time, not as a crash loop. */}}
{{- define "gpulet.draCheck" -}}
{{- if not (semverCompare ">=1.34-0" .Capabilities.KubeVersion.Version) -}}
{{- fail (printf "dra.enabled needs Kubernetes 1.34 or later (resource.k8s.io/v1); this render is for %s" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- end -}}

{{/* NVIDIA's FEATURE_GATES from a map: "A=true,B=false", sorted. */}}
{{- define "gpulet.draFeatureGates" -}}
{{- $out := list -}}
{{- range $k, $v := . -}}
{{- $out = append $out (printf "%s=%v" $k $v) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}
