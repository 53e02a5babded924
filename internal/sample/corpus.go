package sample

// corpus is the English text the demo tokenizer's merges are learned from. It is embedded so the
// tokenizer, and so every generated repository, is the same on every machine.
const corpus = `A lifeboat is not built for the calm day. It is built for the night when the ship is listing,
the lights are out and the crew has minutes, not hours. Nobody tests a lifeboat by reading the plan
again; they lower it into the water, row it around the harbour and count who is on board.

The same is true for the systems that serve a language model. A model in production is more than a
file of weights. It is the weights and the tokenizer, the chat template and the generation defaults,
the engine settings that decide how long a prompt may be, the adapters that are loaded beside the base
model, the container image that runs the server and the manifests that tell the cluster where to put
it. Lose any one of these and the copy in the other region may start, answer the health check and
still return the wrong thing to every user who asks it a question.

So we write it all down. For each file we record its name, its size and the digests that the storage
in every cloud can give us. We check that the copy in each region has the same bytes, and we say so
only when we have looked. A file that we could not compare is unverified, not fine. Then we start the
server on the copy, send it a real request and wait for the first token to come back. Only a replica
that answers is warm.

When a region fails, traffic moves in small steps. The plan is written before the first step is
taken, and every step is written to the journal before it is carried out, so that an operator who is
woken at three in the morning can read what is about to happen, approve it and resume it if the
process is stopped half way. The plan never sends a tenant to a region where its data may not go.
If there is no region left that may take the traffic, the plan stops and says why.

The weather was clear when the drill began. The team had agreed on the scenario the week before: the
store in the first region would stop answering, the router would be told to move the traffic, and the
clock would run until the last request was served from the second region. They had thirty minutes.
The first replica came up in four minutes and the second in six. The third one did not start at all,
because the tokenizer in its copy was an older version that someone had uploaded by hand. The check
found the difference in the digest, the drill report named the file, and the team fixed the copy
before the next quarter. That is what a drill is for: to find the broken thing while there is still
time to fix it.

There are three questions we ask before an outage rather than during one. Is everything that is
needed to serve the model captured? Is every copy complete and intact, and does it really boot and
answer? Can the traffic move away from a region without breaking the rules about where data may live,
and without overloading the regions that receive it? If the answer to each question is yes, and we
have seen it with our own eyes in a drill, then we can sleep a little better.

Keep the plan short. Name the files. Measure the time it takes to recover, and compare it with the
promise you made to your users. Write the numbers down, and do it again next quarter, because the
model will have changed, the engine will have a new version and the people on call will be different.
The work is never finished, but it gets easier each time it is done.

Here is the checklist that the team keeps next to the runbook. One: the weights, every shard, with
the index that names them. Two: the configuration of the model, with the scaling of its position
embeddings intact. Three: the tokenizer, the special tokens and the template for chat. Four: the
adapters and their configuration. Five: the engine settings. Six: the image, pinned by its digest.
Seven: the deployment, with the probe that tells the cluster when the server is ready. Eight: the
time it took, the time we promised, and the difference between them.
`
