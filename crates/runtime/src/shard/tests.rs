//! Shard start-up and cross-shard calls on real executors.

use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::*;

/// Answers with (the shard that ran the request, the request doubled).
struct Doubler {
    shard: usize,
}

impl MeshHandler<u64, (usize, u64)> for Doubler {
    fn handle(self: Rc<Self>, _from: usize, request: u64) -> LocalBoxFuture<(usize, u64)> {
        Box::pin(async move {
            glommio::yield_if_needed().await;
            (self.shard, request * 2)
        })
    }
}

fn run_mesh(shards: usize) -> Vec<Vec<(usize, u64)>> {
    let config = ShardsConfig {
        shard_count: shards,
        pin: false,
        name: "mesh-test".into(),
        ..ShardsConfig::default()
    };
    let plan = config.plan().unwrap();
    assert_eq!(plan.shard_count(), shards);
    let endpoints = mesh_endpoints::<u64, (usize, u64)>(shards, 4);
    let stop = Arc::new(AtomicBool::new(false));
    let set = start_shards(&plan, endpoints, stop, |ctx, endpoints| async move {
        let handler = Rc::new(Doubler { shard: ctx.index });
        let mesh = endpoints.connect(handler, 8).await.unwrap();
        let mut answers = Vec::new();
        // More calls than the rings hold: exercises backpressure.
        for i in 0..64u64 {
            let target = (ctx.index + i as usize) % ctx.count;
            answers.push(mesh.invoke_on(target, i).await.unwrap());
        }
        assert!(mesh.invoke_on(ctx.count, 1).await.is_err());
        let all = mesh.broadcast(1000).await;
        answers.extend(all.into_iter().map(Result::unwrap));
        // Wait until every peer has made all its calls before closing.
        glommio::timer::sleep(std::time::Duration::from_millis(200)).await;
        mesh.close();
        answers
    })
    .unwrap();
    set.join().into_iter().map(Result::unwrap).collect()
}

#[test]
fn calls_run_on_the_target_shard() {
    for shards in [1, 3] {
        let results = run_mesh(shards);
        for (index, answers) in results.iter().enumerate() {
            for (i, answer) in answers[..64].iter().enumerate() {
                assert_eq!(*answer, ((index + i) % shards, 2 * i as u64));
            }
            let broadcast: Vec<_> = answers[64..].to_vec();
            let expected: Vec<_> = (0..shards).map(|s| (s, 2000)).collect();
            assert_eq!(broadcast, expected);
        }
    }
}

#[test]
fn plan_rejects_unknown_cores_and_wraps_shards() {
    let online = online_cores();
    let bad = ShardsConfig {
        cores: vec![usize::MAX],
        ..ShardsConfig::default()
    };
    assert!(matches!(bad.plan(), Err(ShardError::NoSuchCore { .. })));
    let wrap = ShardsConfig {
        shard_count: online.len() + 1,
        ..ShardsConfig::default()
    };
    let plan = wrap.plan().unwrap();
    assert_eq!(plan.cores[online.len()], Some(online[0]));
    let host = ShardsConfig::default().plan().unwrap();
    assert_eq!(
        host.cores,
        host_shard_cores(&online)
            .into_iter()
            .map(Some)
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_host_default_is_one_shard_on_two_cores_and_leaves_a_core_on_more() {
    assert_eq!(host_shard_cores(&[]), Vec::<usize>::new());
    assert_eq!(host_shard_cores(&[3]), vec![3]);
    assert_eq!(host_shard_cores(&[0, 1]), vec![0]);
    assert_eq!(host_shard_cores(&[0, 1, 2]), vec![1, 2]);
    assert_eq!(host_shard_cores(&[0, 2, 4, 6]), vec![2, 4, 6]);
}

/// A shard context for typed calls: its index.
struct Ctx {
    index: usize,
}

/// Answers the index of the shard that ran it.
#[derive(Clone)]
struct WhoRuns;

impl ShardCall<Ctx> for WhoRuns {
    type Reply = usize;

    async fn run(self, ctx: Rc<Ctx>) -> usize {
        ctx.index
    }
}

/// A call with a different reply type on the same mesh.
struct Describe(u64);

impl ShardCall<Ctx> for Describe {
    type Reply = Result<String, String>;

    async fn run(self, ctx: Rc<Ctx>) -> Self::Reply {
        glommio::yield_if_needed().await;
        match self.0 {
            0 => Err(format!("shard {} refuses 0", ctx.index)),
            n => Ok(format!("{n}@{}", ctx.index)),
        }
    }
}

#[test]
fn typed_calls_bring_back_their_own_reply_types() {
    let shards = 3;
    let config = ShardsConfig {
        shard_count: shards,
        pin: false,
        name: "call-test".into(),
        ..ShardsConfig::default()
    };
    let plan = config.plan().unwrap();
    let endpoints = mesh_endpoints::<Box<dyn ErasedCall<Ctx>>, AnyReply>(shards, 4);
    let stop = Arc::new(AtomicBool::new(false));
    let set = start_shards(&plan, endpoints, stop, |ctx, endpoints| async move {
        let handler = Rc::new(Ctx { index: ctx.index });
        let mesh: Rc<CallMesh<Ctx>> = endpoints.connect(handler, 8).await.unwrap();
        let mut seen = Vec::new();
        for target in 0..ctx.count {
            assert_eq!(mesh.call(target, WhoRuns).await.unwrap(), target);
            seen.push(mesh.call(target, Describe(7)).await.unwrap());
            assert_eq!(
                mesh.call(target, Describe(0)).await.unwrap(),
                Err(format!("shard {target} refuses 0"))
            );
        }
        assert!(mesh.call(ctx.count, WhoRuns).await.is_err());
        let all: Vec<usize> = mesh
            .call_all(WhoRuns)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(all, (0..ctx.count).collect::<Vec<_>>());
        glommio::timer::sleep(std::time::Duration::from_millis(200)).await;
        mesh.close();
        seen
    })
    .unwrap();
    for seen in set.join().into_iter().map(Result::unwrap) {
        let expected: Vec<_> = (0..shards).map(|s| Ok(format!("7@{s}"))).collect();
        assert_eq!(seen, expected);
    }
}
