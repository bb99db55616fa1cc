"""Chapter `10_parallel` (Past one GPU: links as levels, tensor-parallel decode): its
checkpoints, its tables of links and algorithms, and the published tensor-parallel runs held
against the model with the collectives' latencies.

A checkpoint takes the learner's answer and returns `Feedback` (`checks.number_rules`)."""

from __future__ import annotations

from .. import _check, collectives, decode, links, parallel, presets, published
from ..model import predict
from ..units import fmt_bandwidth, fmt_bound, fmt_bytes, fmt_capacity, fmt_percent, fmt_time, powers
from .checks import Feedback, check_number, number_rules
from .tables import citation, markdown_table
from .widgets import Checkpoint, WidgetExercise, bars

# --- checkpoints, one per section ---------------------------------------------------------


def cp_ring(gpus: int = 72, name: str = "Llama-3-70B") -> Checkpoint:
    """Section "Collectives counted": the bytes each GPU sends to all-reduce one token's
    activations (the model's width in 2-byte numbers) in a ring of `gpus`, a count the page did
    not work (it works 8)."""
    gpus, m = _check.one("gpus", gpus), decode.model(name)
    message = m.width * 2
    sent = float(collectives.bytes_sent("all-reduce", gpus, message))
    mistakes = [(float(message), "That is the message once; a ring sends a share of it in each of its steps, "
                 "reducing and then gathering."),
                (float(2 * message), "That is twice the message: each GPU never sends its own share back to itself.")]
    if gpus != 8:
        mistakes.append((float(collectives.bytes_sent("all-reduce", 8, message)),
                         "That is the share for a ring of 8, the page's example; count the shares for this ring."))
    return Checkpoint(
        "cp-parallel-ring",
        f"After each layer, {gpus} GPUs all-reduce one token's activations of {name}: {m.width:,} numbers of 2 bytes "
        f"({message:,} bytes). How many bytes does each GPU send in a ring all-reduce?",
        number_rules(sent, "bytes", 0.01, units={"KiB": 1024, "kB": 1000}, mistakes=mistakes,
                     explain=f"2(n - 1)/n of the message: {gpus - 1} steps of reduce-scatter and {gpus - 1} of "
                     f"all-gather, each passing on a share of 1/{gpus} of it.",
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


def cp_request(output: int = 200, prompt: int = 500, gpus: int = 2, name: str = "Llama-3-70B",
               gpu: str = "H100-SXM") -> Checkpoint:
    """Section "A request end to end": a request's time from its prefill and its step, both given
    (fp8, the model's bounds rounded to 0.1 ms), for `output` tokens."""
    out = _check.one("output", output)
    if out < 2:
        raise ValueError(f"output must be at least 2 tokens (a step after the prefill's first), got {output!r}")
    r = parallel.request(name, gpu, gpus, 1, prompt, out, "NVLink 4", weight="fp8", kv="fp8", math="fp8")
    first, step = round(r.prefill.time * 1e3, 1), round(r.step.time * 1e3, 1)
    total = first + (out - 1) * step
    return Checkpoint(
        "cp-parallel-request",
        f"One request to {name} on {gpus} {gpu} GPUs has a prompt of {prompt} tokens and generates {out} tokens. Its "
        f"prefill takes {first} ms and each decode step {step} ms. How many ms pass from its arrival to its last "
        "token?",
        number_rules(total, "ms", 0.01, units={"s": 1e3},
                     mistakes=[(first + out * step, "One step too many: the prefill already gives the first token."),
                               ((out - 1) * step, "That leaves out the prefill, which every request waits for first."),
                               (out * step, "That counts a step for every token and leaves out the prefill.")],
                     explain=f"The prefill gives the first token; each of the other {out - 1} tokens is one step: "
                     f"{first} + {out - 1} x {step} ms.",
                     hint="Which token comes out of the prefill, and how many are left for the steps?"),
        "ms")


def cp_served(batch: int = 30, prompt: int = 2000, output: int = 400) -> Checkpoint:
    """Section "Measured": the prompt tokens a served batch's step carries on average
    (`decode.served_chunk`), for a batch, prompt and output the page did not work."""
    chunk = decode.served_chunk(batch, prompt, output)
    if chunk == 0:
        raise ValueError(f"batch must leave other requests to replace (at least 2) and prompt at least output / "
                         f"(batch - 1), got batch={batch!r}, prompt={prompt!r}, output={output!r}")
    return Checkpoint(
        "cp-parallel-served",
        f"{batch} requests are served continuously, each with a {prompt:,}-token prompt that generates {output} "
        "tokens and is then replaced. About how many prompt tokens does each decode step carry?",
        number_rules(float(chunk), "tokens", 0.02,
                     mistakes=[(float(batch * prompt // output), "That counts the request itself: its own prompt was "
                                "prefilled before its first token."),
                               (float(prompt // output), "That is one request's prompt spread over its own tokens; "
                                "every other request in the batch is replaced too.")],
                     explain=f"While one request emits its {output} tokens, each of the other {batch - 1} is replaced "
                     f"once: {batch - 1} x {prompt:,} / {output} = {chunk} prompt tokens a step.",
                     hint="While one request emits its tokens, how many other prompts arrive, and over how many "
                     "steps are they spread?"),
        "tokens")


CHECKPOINTS = {"cp-parallel-ring": cp_ring, "cp-parallel-collectives": cp_collectives, "cp-parallel-served": cp_served,
               "cp-parallel-request": cp_request}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-parallel-ring": ("ring_share", "term:all-reduce"),            # 2(n - 1)/n of the message, worked for 8
    "cp-parallel-collectives": ("term:tensor parallelism", "term:LM head"),  # two all-reduces a layer, one gather
    "cp-parallel-served": ("nim_others", "nim_chunk"),                 # (b - 1) p / o, worked for NIM's 50
    "cp-parallel-request": ("rq_prefill_share",),                      # the prefill, then a step per later token
    "ex-parallel-best-gpus": ("b200_best", "nvls_floor", "head_divisors"),             # Llama-3-70B's count and why; the question gives the rest
    "ex-parallel-explore-steps": ("nvls_from", "nvls_fixed", "nvls_eff_blackwell", "ring_base", "ring_step",
                                  "term:in-switch reduction"),         # batch 1's switch-over; each algorithm's costs
    "ex-parallel-explore-drafts": ("term:speculative decoding",),      # the checking step of k + 1 queries
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
# --- the widget exercise -------------------------------------------------------------------

SYSTEMS = {"B200": "NVL72", "H100-SXM": "NVLink 4"}
"""The explorer's systems: each GPU with the link that joins it (an HGX H100 board, an NVL72 rack)."""
GPU_COUNTS = parallel.head_splits("Llama-3-70B", 72)
"""The explorer's GPU counts: those that split Llama-3-70B's query heads on an NVL72 rack."""
BATCHES = (1, 8, 64)
CONTEXTS = (1024, 4096, 32768)
MODEL = "Llama-3-70B"


ALGORITHM_NAMES = {"ring": "ring", "tree": "double binary tree", "in-switch": "in-switch reduction (NVLS)",
                   collectives.HIERARCHICAL: "hierarchical (within each node, then across)"}
"""How the page names each algorithm of `collectives.ALGORITHMS` and the hierarchical one."""


def switch_over(link: str, message: float) -> int:
    """The fewest GPUs over `link` at which NCCL's tuner runs an all-reduce of `message` bytes by
    the in-switch reduction (`parallel.collective`); 0 where it never does within the link's domain."""
    joined = links.link(link)
    if not joined.in_switch:
        return 0
    most = joined.domain
    return next((n for n in range(2, most + 1) if parallel.collective(link, "all-reduce", n, message)[1] == "in-switch"), 0)


def steps(question_batch: int = 64, question_context: int = 4096) -> WidgetExercise:
    """Chapter 10: Llama-3-70B's tensor-parallel step against GPUs, batch and context on 8 H100s
    joined by NVLink 4 and on an NVL72 rack of B200s (`parallel.step`, latencies included, each
    all-reduce by the algorithm NCCL's tuner picks, which the caption names); a count past the
    link's domain, or a state whose weights and caches do not fit, is refused. The question: the
    fewest GPUs of the rack at which the step's all-reduces run by the in-switch reduction, at the
    given batch and context."""
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
        by = f", its all-reduces by <b>{ALGORITHM_NAMES[s.algorithm]}</b>" if s.algorithm else ", one GPU: no collectives"
        return bars(f"{MODEL} on {gpus} x {gpu} ({link.name}), batch {batch}, context {context:,}: <b>{fmt_time(s.time)}</b> "
                    f"a step, {batch / s.time:,.0f} tokens/s, its larger part <b>{fmt_bound(s.bound)}</b>{by}",
                    [("one GPU's share", s.gpu_time, fmt_time(s.gpu_time), s.bound != "link"),
                     ("collectives", s.link_time, fmt_time(s.link_time), s.bound == "link")])

    rack = SYSTEMS["B200"]
    shown = [n for n in GPU_COUNTS if n > 1 and parallel.step(MODEL, "B200", n, question_batch, question_context, rack).fits]
    asks = tuple({"gpu": "B200", "gpus": n, "batch": question_batch, "context": question_context} for n in shown)
    message = question_batch * decode.model(MODEL).width * parallel.ACTIVATION_BYTES
    answer = switch_over(rack, message)
    mistakes = []
    one = switch_over(rack, decode.model(MODEL).width * parallel.ACTIVATION_BYTES)
    if question_batch != 1 and one != answer:
        mistakes.append((float(one), "That is where it takes over at batch 1. At this batch each all-reduce carries "
                                     "more bytes; weigh them by each algorithm's rate."))
    return WidgetExercise(
        "parallel-steps", {"gpu": list(SYSTEMS), "gpus": list(GPU_COUNTS), "batch": list(BATCHES), "context": list(CONTEXTS)},
        view,
        number_rules(float(answer), "GPUs", 0, whole=True, mistakes=mistakes,
                     explain="The ring's cost grows by two steps of latency with each GPU; the in-switch reduction's "
                     "stays one flat latency plus the message at its own rate. A larger message also favours the "
                     "in-switch reduction, which sends the message once where a ring sends it nearly twice, so it "
                     "takes over a little sooner.",
                     hint="Price one all-reduce of this batch's activations both ways with the table's costs, or step "
                     "the rack's GPUs up in the explorer at this batch and read which algorithm the caption names."),
        "GPUs", asks=asks)


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
    """The number of GPUs (of those that split the model's heads, within the link's domain:
    `parallel.head_splits`) on which the tensor-parallel step of `name` at `batch` and `context`
    is fastest (`parallel.step`, with the link's latencies)."""
    return min(parallel.head_splits(name, links.link(link).domain),
               key=lambda n: parallel.step(name, gpu, n, batch, context, link).time)


def check_best_gpus(name: str, gpu: str, link: str, batch: int, context: int, answer) -> Feedback:
    """Chapter 10: the GPUs on which a tensor-parallel decode step is fastest."""
    best = best_gpus(name, gpu, link, batch, context)
    most = parallel.head_splits(name, links.link(link).domain)[-1]
    wrong = {float(most): "The most GPUs that split its heads is slower for this model: each collective still pays "
                          "its fixed latency, while the share of the weights one more GPU saves has grown small."}
    if name != MODEL and decode.model(name).params != decode.model(MODEL).params:
        theirs = float(best_gpus(MODEL, gpu, link, batch, context))
        wrong[theirs] = (f"That is {MODEL}'s count, from the chapter; this model has another balance of weights to "
                         "save and collectives to wait for.")
    wrong.pop(float(best), None)
    return check_number(answer, float(best), "GPUs", rtol=0, key=f"check_best_gpus({name}, {gpu}, {link}, {batch}, {context})",
                        mistakes=list(wrong.items()),
                        explain="Past it, the time the collectives add outgrows what the smaller share of the "
                        "weights saves; the fewer weights a model has per layer, the sooner that comes.",
                        hint="Compute the step for each number of GPUs and take the fastest.")


def links_table() -> str:
    """Every link of `data/links.toml`: its bandwidth one way per GPU, NCCL's ring latencies for it,
    its in-switch reduction where its switches add, the GPUs it joins and its source."""
    rows = []
    for link in links.links().values():
        bw, lat, base = (link.facts[k] for k in ("bandwidth", "latency", "base"))
        nvls = (f"{fmt_time(link.facts['in_switch_latency'].value)} at "
                f"{fmt_bandwidth(link.facts['in_switch_bandwidth'].value)}" if link.in_switch else "none")
        rows.append([link.name, ", ".join(link.gpus), f"{link.domain:,}" if link.between == "gpus" else "nodes (a network)",
                     fmt_bandwidth(bw.value), f"{fmt_time(lat.value)} a step, {fmt_time(base.value)} a collective", nvls,
                     f"{citation(bw.source, textual=True)}, {bw.where}; latencies {citation(lat.source, textual=True)}"])
    return markdown_table(["link", "GPUs", "GPUs joined", "each way per GPU", "ring latency (NCCL's tuner)",
                           "in-switch reduction (NCCL's tuner)", "source"], rows)


def _family(name: str) -> str:
    """A link's kind as the algorithms table groups it: NVLink (the NVL72 rack's too), PCIe, InfiniBand."""
    return "NVLink" if name.startswith("NVL") else name.split()[0]


def _grouped(values: dict) -> str:
    """Each value once, with the kinds of link that have it ('0.6 us (NVLink); 1.0 us (PCIe)'),
    or the value alone where every link given has it."""
    out = {}
    for name, value in values.items():
        out.setdefault(value, {}).setdefault(_family(name))
    if len(out) == 1:
        return next(iter(out))
    return "; ".join(f"{v} ({', '.join(kinds)})" for v, kinds in out.items())


def algorithms_table() -> str:
    """The four algorithms of an all-reduce of M bytes among n GPUs as NCCL's tuner prices them
    (`parallel.collective`): the links that offer each (`parallel.algorithms`), its steps, the bytes
    each GPU sends, its latencies and its rate, from `data/links.toml`."""
    every = links.links()
    offer = {a: [k for k in every if a in parallel.algorithms(k)] for a in ALGORITHM_NAMES}
    fact = lambda algorithm, key: _grouped({k: fmt_time(every[k].facts[key].value) for k in offer[algorithm]})
    rates = {}
    for k in offer["in-switch"]:
        share = every[k].facts["in_switch_bandwidth"].value / every[k].bandwidth
        rates.setdefault((share, every[k].facts["in_switch_bandwidth"].value), []).extend(
            g for g in every[k].gpus if g not in sum(rates.values(), []))
    rate = "; ".join(f"{share:.0%} of the link on {', '.join(gpus)} ({fmt_bandwidth(value)})"
                     for (share, value), gpus in rates.items())
    rows = [
        [ALGORITHM_NAMES["ring"], "every link", "2(n - 1)", "2(n - 1)/n x M",
         f"{fact('ring', 'base')} a collective, plus a step: {fact('ring', 'latency')}", "the link's"],
        [ALGORITHM_NAMES["tree"], ", ".join(offer["tree"]) + " (between nodes)", "2 log2 n", "2 x M",
         f"{fact('tree', 'tree_base')} a collective, plus a step: {fact('tree', 'tree_latency')}", "the link's"],
        [ALGORITHM_NAMES["in-switch"], ", ".join(offer["in-switch"]), "one pass through the switch", "M",
         f"{fact('in-switch', 'in_switch_latency')} a collective, in all", rate],
        [ALGORITHM_NAMES[collectives.HIERARCHICAL], ", ".join(offer[collectives.HIERARCHICAL]) + " (nodes of g GPUs)",
         "2(g - 1) within, 2(k - 1) across k nodes", "2(g - 1)/g x M within; 2(k - 1)/k x M/g across",
         f"the ring's base, a step within at the node's link's, a step across: {fact(collectives.HIERARCHICAL, 'latency')}",
         "the slower stage's"],
    ]
    return markdown_table(["algorithm", "NCCL runs it over", "steps", "bytes each GPU sends", "latency (NCCL's tuner)",
                           "rate"], rows)



def tensor_parallel_runs() -> list:
    """The published tensor-parallel decodes this chapter compares (`published.comparisons` of
    chapter 10, runs of kind "parallel"), each as (comparison, seconds of the model's step with the
    collectives' latencies): `parallel.step` as the chapter uses it, where the comparison's bound
    leaves the latencies out."""
    out = []
    for c in published.comparisons(chapter=10):
        run = c.record.run
        if run["kind"] == "parallel":
            out.append((c, published.run_step(run, c.record.gpu).time))
    return out


def latencies_table() -> str:
    """The published tensor-parallel decodes (`tensor_parallel_runs`): the measured step, the
    bound (bytes alone, as the published table holds it), the model with the collectives'
    latencies, and the share of each the run reached."""
    rows = [[c.record.gpu, powers(c.record.what), fmt_time(c.measured), fmt_time(c.model), fmt_time(model),
             fmt_percent(c.fraction), fmt_percent(model / c.measured)] for c, model in tensor_parallel_runs()]
    return markdown_table(["GPU", "run", "measured step", "bound (bytes alone)", "model with latencies",
                           "of the bound", "of the model"], rows)
