package nodewrites

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	heraldv1 "github.com/herald-lb/herald/api/v1beta1"
)

// SpeakerOfInstallation is what the speaker of node in the second
// installation inst may write of the SpeakerStatuses: not the default
// installation's (node), not its own without its installation's label;
// its own, <node>.<inst>, yes.
func SpeakerOfInstallation(node, inst string) []Write {
	own := node + "." + inst
	return []Write{
		{What: "write SpeakerStatus " + node + " (the default installation's)", Refusal: "SpeakerStatus " + node + " refused", do: writeStatus(node)},
		{What: "write SpeakerStatus " + own + " without its label", Refusal: "labelled " + heraldv1.LabelInstallation + "=" + inst,
			do: writeStatusLabel(own, "")},
		{What: "write SpeakerStatus " + own, Allowed: true, do: writeStatus(own)},
	}
}

// DefaultSpeakerBeside is what the default installation's speaker of
// node may not write beside installation inst: inst's SpeakerStatus of
// node, nor its own labelled as inst's.
func DefaultSpeakerBeside(node, inst string) []Write {
	other := node + "." + inst
	return []Write{
		{What: "write SpeakerStatus " + other + " (installation " + inst + "'s)", Refusal: "SpeakerStatus " + other + " refused", do: writeStatus(other)},
		{What: "write SpeakerStatus " + node + " labelled as " + inst + "'s", Refusal: "SpeakerStatus " + node + " refused",
			do: writeStatusLabel(node, inst)},
	}
}

// writeStatusLabel reads a SpeakerStatus and writes it back with the
// installation label set to inst ("": removed).
func writeStatusLabel(name, inst string) func(context.Context, clients) error {
	return func(ctx context.Context, c clients) error {
		statuses := c.herald.HeraldV1beta1().SpeakerStatuses()
		s, err := statuses.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		delete(s.Labels, heraldv1.LabelInstallation)
		if inst != "" {
			if s.Labels == nil {
				s.Labels = map[string]string{}
			}
			s.Labels[heraldv1.LabelInstallation] = inst
		}
		_, err = statuses.Update(ctx, s, metav1.UpdateOptions{DryRun: dryRun})
		return err
	}
}
