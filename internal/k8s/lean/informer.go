package lean

import (
	"context"
	"fmt"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// InformerOptions configure NewInformer.
type InformerOptions struct {
	// Tweak edits the options of every list and watch (a field selector).
	Tweak func(*metav1.ListOptions)
	// Transform edits every object before it is cached.
	Transform cache.TransformFunc
	// NoWatchList: see API.NoWatchList.
	NoWatchList bool
	// Log receives the retries of a refused first list (firstList); nil:
	// slog.Default().
	Log *slog.Logger
}

// NewInformer returns a shared informer of the kind c lists, with a
// namespace index (what generated listers read), as client-go's generated
// informers build theirs. example is a zero object of that kind.
func NewInformer[L runtime.Object](c ListWatcher[L], example runtime.Object, o InformerOptions) (cache.SharedIndexInformer, error) {
	tweak := func(opts *metav1.ListOptions) {
		if o.Tweak != nil {
			o.Tweak(opts)
		}
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	first := &firstList{kind: fmt.Sprintf("%T", example), log: log, every: firstListRetry}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return first.list(ctx, func() (runtime.Object, error) { return c.List(ctx, opts) })
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			return c.Watch(ctx, opts)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, watchListSupport(!o.NoWatchList)),
		example, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if o.Transform != nil {
		if err := inf.SetTransform(o.Transform); err != nil {
			return nil, err
		}
	}
	return inf, nil
}

// watchListSupport tells client-go's reflector whether the client serves
// streaming watch-lists (util/watchlist's unSupportedWatchListSemantics).
type watchListSupport bool

func (s watchListSupport) IsWatchListSemanticsUnSupported() bool { return !bool(s) }
