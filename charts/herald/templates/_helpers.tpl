{{/* Labels every object carries; component is "controller" or "speaker". */}}
{{- define "herald.labels" -}}
app.kubernetes.io/name: herald
app.kubernetes.io/component: {{ . }}
{{- end }}

{{/* An image reference: repository and tag, the tag defaulting to appVersion. */}}
{{- define "herald.image" -}}
{{- $img := index .root.Values.image .component -}}
{{ $img.repository }}:{{ $img.tag | default .root.Chart.AppVersion }}
{{- end }}

{{/* A pod's scheduling settings common to both workloads. */}}
{{- define "herald.scheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
