"""Chapter `10_parallel` (Past one GPU: links as levels, tensor-parallel decode): its
checkpoints and its table of links.

A checkpoint takes the learner's answer and returns `Feedback` (`checks.number_rules`)."""

from __future__ import annotations

from .. import _check, collectives, decode, links, parallel, presets
from ..model import predict
from ..units import fmt_bandwidth, fmt_bound, fmt_bytes, fmt_capacity, fmt_time
from .checks import Feedback, check_number, number_rules
from .tables import citation, markdown_table
from .widgets import Checkpoint, WidgetExercise, bars

# --- checkpoints, one per section ---------------------------------------------------------


def cp_ring(gpus: int = 8, name: str = "Llama-3-70B") -> Checkpoint:
    """Section "Collectives counted": the bytes each GPU sends to all-reduce one token's
    activations (the model's width in 2-byte numbers) in a ring of `gpus`."""
    gpus, m = _check.one("gpus", gpus), decode.model(name)
    message = m.width * 2
    sent = float(collectives.bytes_sent("all-reduce", gpus, message))
    return Checkpoint(
        "cp-parallel-ring",
        f"After each layer, {gpus} GPUs all-reduce one token's activations of {name}: {m.width:,} numbers of 2 bytes "
        f"({message:,} bytes). How many bytes does each GPU send in a ring all-reduce?",
        number_rules(sent, "bytes", 0.01, units={"KiB": 1024, "kB": 1000},
                     mistakes=[(float(message), "That is the message once; a ring sends a share of it in each of "
                                "its steps, reducing and then gathering."),
                               (float(2 * message), "That is twice the message: each GPU never sends its own share "
                                "back to itself.")],
                     explain=f"2(n - 1)/n of the message: {gpus - 1} steps of reduce-scatter and {gpus - 1} of "
                     f"all-gather, each passing one {gpus}th of it on.",
                     hint="A ring cuts the message into one share per GPU; count the shares each GPU passes on "
                     "while reducing and while gathering."),
        "bytes")


def cp_collectives(name: str = "Llama-3-70B") -> Checkpoint:
    """Section "A decode step over several GPUs": the collectives one token of a
    tensor-parallel step waits for."""
    m = decode.model(name)
    count = 2 * m.layers + 1
    return Checkpoint(
        "cp-parallel-collectives",
        f"{name} has {m.layers} layers. Split by tensor parallelism, how many collectives does one decode step wait "
        "for, one after another?",
        number_rules(float(count), "collectives", 0.001, whole=True,
                     mistakes=[(float(m.layers), "One a layer misses the second: attention's output and the MLP's "
                                "are each summed across the GPUs."),
                               (float(2 * m.layers), "Close: the LM head's logits, split by vocabulary, are "
                                "gathered once more.")],
                     explain="Two all-reduces a layer (after attention and after the MLP) and one gather of the "
                     "logits; each waits for the layer before it and the next layer waits for it.",
                     hint="Which of a layer's matrix products end with each GPU holding only part of a sum?"),
        "collectives")


CHECKPOINTS = {"cp-parallel-ring": cp_ring, "cp-parallel-collectives": cp_collectives}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-parallel-ring": ("ring_share", "term:all-reduce"),            # 2(n - 1)/n of the message, worked for 8
    "cp-parallel-collectives": ("term:tensor parallelism", "term:LM head"),  # two all-reduces a layer, one gather
    "ex-parallel-best-gpus": ("b200_best",),                           # Llama-3-70B's count; the question gives the rest
    "ex-parallel-explore-steps": (),                                   # read from the explorer
    "ex-parallel-explore-drafts": ("term:speculative decoding",),      # the checking step of k + 1 queries
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
# --- the widget exercise -------------------------------------------------------------------

SYSTEMS = {"B200": "NVL72", "H100-SXM": "NVLink 4"}
"""The explorer's systems: each GPU with the link that joins it (an HGX H100 board, an NVL72 rack)."""
GPU_COUNTS = (1, 2, 4, 8, 16, 36, 72)
BATCHES = (1, 8, 64)
CONTEXTS = (1024, 4096, 32768)
MODEL = "Llama-3-70B"


def steps(question_batch: int = 1, question_context: int = 4096) -> WidgetExercise:
    """Chapter 10: Llama-3-70B's tensor-parallel step against GPUs, batch and context on 8 H100s
    joined by NVLink 4 and on an NVL72 rack of B200s (`parallel.step`, latencies included); a
    count past the link's domain, or a state whose weights and caches do not fit, is refused.
    The question: how many times longer a step takes on all 72 of the rack's GPUs than on 8, at
    the given batch and context."""
    _check.member("question_batch", question_batch, BATCHES)
    _check.member("question_context", question_context, CONTEXTS)

    def view(gpu, gpus, batch, context):
        link = links.link(SYSTEMS[gpu])
        if gpus > link.domain:
            raise ValueError(f"{link.name} joins at most {link.domain} {gpu} GPUs as one")
        s = parallel.step(MODEL, gpu, gpus, batch, context, link.name)
        if not s.fits:
            raise ValueError(f"the weights and {batch} {'cache' if batch == 1 else 'caches'} of {context:,} tokens need {fmt_bytes(s.held)} on each GPU, "
                             f"more than the {gpu}'s {fmt_capacity(presets.gpu(gpu).capacity('hbm'))}")
        return bars(f"{MODEL} on {gpus} x {gpu} ({link.name}), batch {batch}, context {context:,}: <b>{fmt_time(s.time)}</b> "
                    f"a step, {batch / s.time:,.0f} tokens/s, bound by <b>{fmt_bound(s.bound)}</b>",
                    [("one GPU's share", s.gpu_time, fmt_time(s.gpu_time), s.bound != "link"),
                     ("collectives", s.link_time, fmt_time(s.link_time), s.bound == "link")])

    asks = tuple({"gpu": "B200", "gpus": n, "batch": question_batch, "context": question_context} for n in (72, 8))
    t72, t8 = (parallel.step(MODEL, "B200", n, question_batch, question_context, SYSTEMS["B200"]).time for n in (72, 8))
    return WidgetExercise(
        "parallel-steps", {"gpu": list(SYSTEMS), "gpus": list(GPU_COUNTS), "batch": list(BATCHES), "context": list(CONTEXTS)},
        view,
        number_rules(t72 / t8, "times", 0.02,
                     explain="The weights' share shrinks as 1/n, but every step waits for 161 collectives whose "
                     "fixed latencies grow with the ring: past a few GPUs the link sets the step.",
                     hint="Read the step's time on the B200 at 72 GPUs and at 8, at that batch and context, and divide."),
        "ratio", asks=asks)


DRAFT_MODELS = ("Llama-3-70B", "Llama-3-8B")
DRAFT_BATCHES = (1, 8, 32, 64, 256)
DRAFTED = tuple(range(8))
ACCEPTANCES = (0.6, 0.7, 0.8, 0.9)
DRAFT_GPU, DRAFT_WEIGHT, DRAFT_CONTEXT = "B200", "fp8", 4096
"""The speculative explorer's menus, and the GPU, weight format and context it holds fixed."""


def drafts(question_batch: int = 64, question_acceptance: float = 0.7) -> WidgetExercise:
    """Chapter 10's "More than one token a step": a speculative step's tokens per second against
    a plain step's, by model, batch, drafted tokens and their acceptance, on one B200 with fp8
    weights at a context of 4,096 (`decode.speculative_speedup`: the draft's own cost left out,
    a bound); a batch whose caches do not fit beside the weights (`decode.max_batch`) is refused.
    The question: how many drafted tokens give Llama-3-70B the most tokens per second at the
    given batch and acceptance."""
    _check.member("question_batch", question_batch, DRAFT_BATCHES)
    _check.member("question_acceptance", question_acceptance, ACCEPTANCES)

    def view(model, batch, drafted, acceptance):
        most = decode.max_batch(model, DRAFT_GPU, DRAFT_CONTEXT, DRAFT_WEIGHT)
        if batch > most:
            raise ValueError(f"{model}'s {DRAFT_WEIGHT} weights leave room on a {DRAFT_GPU} for the caches of "
                             f"{most} sequences of {DRAFT_CONTEXT:,} tokens, not {batch}")
        plain = batch / float(decode.step_time(model, DRAFT_GPU, batch, DRAFT_CONTEXT, DRAFT_WEIGHT))
        gain = float(decode.speculative_speedup(model, DRAFT_GPU, batch, DRAFT_CONTEXT, drafted, acceptance,
                                                weight=DRAFT_WEIGHT))
        checked = predict(decode.step(model, batch, DRAFT_CONTEXT, DRAFT_WEIGHT, queries=drafted + 1), DRAFT_GPU)
        return bars(f"{model} on a {DRAFT_GPU} ({DRAFT_WEIGHT} weights), batch {batch}, context {DRAFT_CONTEXT:,}, "
                    f"{drafted} drafted, each accepted {acceptance:.0%}: <b>{gain:.2f} times</b> the tokens per "
                    f"second of one token a step; the checking step bound by <b>{fmt_bound(str(checked.bound))}</b>",
                    [("one token a step", plain, f"{plain:,.0f} tokens/s", False),
                     ("with the drafts", gain * plain, f"{gain * plain:,.0f} tokens/s", gain < 1)])

    gains = {k: float(decode.speculative_speedup(DRAFT_MODELS[0], DRAFT_GPU, question_batch, DRAFT_CONTEXT, k,
                                                 question_acceptance, weight=DRAFT_WEIGHT)) for k in DRAFTED}
    best = max(gains, key=gains.get)
    asks = tuple({"model": DRAFT_MODELS[0], "batch": question_batch, "drafted": k, "acceptance": question_acceptance}
                 for k in DRAFTED)
    return WidgetExercise(
        "parallel-drafts", {"model": list(DRAFT_MODELS), "batch": list(DRAFT_BATCHES), "drafted": list(DRAFTED),
                            "acceptance": list(ACCEPTANCES)},
        view,
        number_rules(float(best), "drafted tokens", 0, whole=True,
                     mistakes=[(float(DRAFTED[-1]), "The most drafts pays at batch 1, where checking them costs "
                                "almost nothing; at this batch each drafted token is a query per sequence more, and "
                                "the checking step has left HBM's bound.")],
                     explain="Each drafted token adds a query per sequence to the checking step; once those have made "
                     "the step compute-bound, each further draft costs more time than the tokens it is expected to "
                     "yield.",
                     hint="Keep the model, batch and acceptance, step the drafted tokens from 0 up, and watch the "
                     "times and the checking step's bound."),
        "drafted tokens", asks=asks)


WIDGET_EXERCISES = (steps, drafts)
"""This chapter's widget exercises, in the order it shows them."""

# --- end-of-chapter exercises -------------------------------------------------------------


def best_gpus(name: str, gpu: str, link: str, batch: int, context: int) -> int:
    """The number of GPUs (1 to the link's domain) on which the model's tensor-parallel step of
    `name` at `batch` and `context` is fastest (`parallel.step`, with the link's latencies)."""
    most = links.link(link).domain
    return min(range(1, most + 1), key=lambda n: parallel.step(name, gpu, n, batch, context, link).time)


def check_best_gpus(name: str, gpu: str, link: str, batch: int, context: int, answer) -> Feedback:
    """Chapter 10: the GPUs on which a tensor-parallel decode step is fastest."""
    best = best_gpus(name, gpu, link, batch, context)
    most = links.link(link).domain
    wrong = [(float(most), "All of them is slower: each collective's fixed latency grows with the ring while the "
              "weights' share shrinks.")]
    if name != MODEL and decode.model(name).params != decode.model(MODEL).params:
        wrong.append((float(best_gpus(MODEL, gpu, link, batch, context)), f"That is {MODEL}'s count, from the "
                      "chapter; this model has another balance of weights to save and collectives to wait for."))
    return check_number(answer, float(best), "GPUs", rtol=0, key=f"check_best_gpus({name}, {gpu}, {link}, {batch}, {context})",
                        mistakes=wrong,
                        explain="Past it, the time the collectives add outgrows what the smaller share of the "
                        "weights saves; the fewer weights a model has per layer, the sooner that comes.",
                        hint="Compute the step for each number of GPUs and take the fastest.")


def links_table() -> str:
    """Every link of `data/links.toml`: its bandwidth one way per GPU, NCCL's latencies for it,
    the GPUs it joins and its source."""
    rows = []
    for link in links.links().values():
        bw, lat, base = (link.facts[k] for k in ("bandwidth", "latency", "base"))
        rows.append([link.name, ", ".join(link.gpus), f"{link.domain:,}" if link.domain < 1000 else "a network",
                     fmt_bandwidth(bw.value), f"{fmt_time(lat.value)} a step, {fmt_time(base.value)} a collective",
                     f"{citation(bw.source, textual=True)}, {bw.where}; latencies {citation(lat.source, textual=True)}"])
    return markdown_table(["link", "GPUs", "GPUs joined", "each way per GPU", "latency (NCCL's tuner)", "source"], rows)
