//! Typed cross-shard calls (Seastar's `sharded<T>::invoke_on`).
//!
//! A call is a value whose type names its reply: `impl ShardCall<Ctx> for
//! X { type Reply = Y; .. }`. The mesh carries it type-erased
//! (`Box<dyn ErasedCall<Ctx>>`) and brings the reply back as
//! `Box<dyn Any + Send>`; [`Mesh::call`] downcasts it to `X::Reply`. A call
//! that the target cannot run does not compile, so there is no central
//! request enum and no "unexpected answer" arm anywhere. Each call type
//! sits next to the code that sends it.
//!
//! Cost: one `Box` for the call and one for the reply per call, on the same
//! rings and with the same hops as before.

use std::any::Any;
use std::future::Future;
use std::rc::Rc;

use super::mesh::{LocalBoxFuture, Mesh, MeshError, MeshHandler};

/// Work one shard asks another to run against its context `Ctx` (the
/// per-shard state). `Send`: it crosses cores; the reply crosses back.
pub trait ShardCall<Ctx: 'static>: Send + 'static {
    type Reply: Send + 'static;

    /// Runs on the target shard's executor.
    fn run(self, ctx: Rc<Ctx>) -> impl Future<Output = Self::Reply> + 'static;
}

/// A reply on its way back, type-erased.
pub type AnyReply = Box<dyn Any + Send>;

/// A [`ShardCall`] with its types erased, as it travels on a ring.
pub trait ErasedCall<Ctx>: Send {
    fn run_erased(self: Box<Self>, ctx: Rc<Ctx>) -> LocalBoxFuture<AnyReply>;
}

impl<Ctx: 'static, C: ShardCall<Ctx>> ErasedCall<Ctx> for C {
    fn run_erased(self: Box<Self>, ctx: Rc<Ctx>) -> LocalBoxFuture<AnyReply> {
        Box::pin(async move { Box::new((*self).run(ctx).await) as AnyReply })
    }
}

/// The mesh of typed calls against shard context `Ctx`.
pub type CallMesh<Ctx> = Mesh<Box<dyn ErasedCall<Ctx>>, AnyReply>;

/// Every shard context runs the calls sent to it.
impl<Ctx: 'static> MeshHandler<Box<dyn ErasedCall<Ctx>>, AnyReply> for Ctx {
    fn handle(
        self: Rc<Self>,
        _from_shard: usize,
        call: Box<dyn ErasedCall<Ctx>>,
    ) -> LocalBoxFuture<AnyReply> {
        call.run_erased(self)
    }
}

impl<Ctx: 'static> Mesh<Box<dyn ErasedCall<Ctx>>, AnyReply> {
    /// Runs `call` on shard `target` and returns its typed reply.
    pub async fn call<C: ShardCall<Ctx>>(
        &self,
        target: usize,
        call: C,
    ) -> Result<C::Reply, MeshError> {
        let reply = self.invoke_on(target, Box::new(call)).await?;
        Ok(downcast::<C, Ctx>(reply))
    }

    /// Runs a copy of `call` on every shard (this one included) at once;
    /// replies are in shard order.
    pub async fn call_all<C: ShardCall<Ctx> + Clone>(
        self: &Rc<Self>,
        call: C,
    ) -> Vec<Result<C::Reply, MeshError>> {
        let tasks: Vec<_> = (0..self.shard_count())
            .map(|target| {
                let mesh = self.clone();
                let call = call.clone();
                glommio::spawn_local(async move { mesh.call(target, call).await })
            })
            .collect();
        let mut replies = Vec::with_capacity(tasks.len());
        for task in tasks {
            replies.push(task.await);
        }
        replies
    }
}

/// The reply to a `C` is a `C::Reply` by construction (the pending slot is
/// keyed by the call's id): anything else is a bug in the mesh.
fn downcast<C: ShardCall<Ctx>, Ctx: 'static>(reply: AnyReply) -> C::Reply {
    match reply.downcast::<C::Reply>() {
        Ok(reply) => *reply,
        Err(_) => panic!(
            "a cross-shard reply is not a {}",
            std::any::type_name::<C::Reply>()
        ),
    }
}
