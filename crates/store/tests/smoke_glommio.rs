use glommio::{channels::shared_channel, LocalExecutorBuilder, Placement};

#[test]
fn glommio_smoke() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let p2 = p.clone();
    let (tx, rx) = shared_channel::new_bounded::<u64>(4);
    let a = LocalExecutorBuilder::new(Placement::Unbound).name("a").spawn(move || async move {
        let tx = tx.connect().await;
        for i in 0..100 { tx.send(i).await.unwrap(); }
    }).unwrap();
    let b = LocalExecutorBuilder::new(Placement::Unbound).name("b").spawn(move || async move {
        let rx = rx.connect().await;
        let mut s = 0; while let Some(x) = rx.recv().await { s += x; }
        let f = glommio::io::OpenOptions::new().write(true).create(true).dma_open(&p2).await.unwrap();
        f.pre_allocate(1<<20, false).await.unwrap();
        let mut buf = f.alloc_dma_buffer(4096);
        buf.as_bytes_mut()[0] = 7;
        let n = f.write_at(buf, 4096).await.unwrap();
        f.fdatasync().await.unwrap();
        let bf = glommio::io::OpenOptions::new().write(true).create(true).buffered_open(p2.with_extension("b")).await.unwrap();
        bf.write_at(vec![1,2,3], 10).await.unwrap();
        bf.fdatasync().await.unwrap();
        (s, n, f.alignment())
    }).unwrap();
    a.join().unwrap();
    let r = b.join().unwrap();
    println!("{:?}", r);
    assert_eq!(std::fs::read(&p).unwrap()[4096], 7);
}
