import { MPI_RUNTIMES, applyUserOverrides, fabricPreset, isRdmaCapable, resolveFabric } from '../../shared/core/mpi/rdmaPresets';

describe('isRdmaCapable', () => {
  it.each([
    'Standard_HB120rs_v3',
    'Standard_HB120-96rs_v3',
    'Standard_HB176rs_v4',
    'Standard_HC44rs',
    'Standard_H16r',
    'Standard_H16mr',
    'Standard_ND96asr_v4',
    'Standard_ND96isr_H100_v5',
    'Standard_ND40rs_v2',
    'Standard_NC24rs_v3',
    'standard_hb60rs',
    'Standard_A9',
  ])('%s has InfiniBand', (size) => expect(isRdmaCapable(size)).toBe(true));

  it.each([
    'Standard_D4s_v3',
    'Standard_F72s_v2',
    'Standard_H16',
    'Standard_H16m',
    'Standard_NC96ads_A100_v4',
    'Standard_HB120s_v3',
    'Standard_A8_v2',
    'Standard_E64ds_v5',
    'not a size',
    '',
  ])('%s has no InfiniBand', (size) => expect(isRdmaCapable(size)).toBe(false));

  it('resolves auto from the VM size and keeps explicit choices', () => {
    expect(resolveFabric('auto', 'Standard_HB120rs_v3')).toBe('rdma');
    expect(resolveFabric('auto', 'Standard_D4s_v3')).toBe('tcp');
    expect(resolveFabric('tcp', 'Standard_HB120rs_v3')).toBe('tcp');
    expect(resolveFabric('rdma', 'Standard_D4s_v3')).toBe('rdma');
  });
});

describe('fabricPreset', () => {
  const envOf = (p: ReturnType<typeof fabricPreset>) => Object.fromEntries(p.env.map((e) => [e.name, e.value]));

  it('Intel MPI 2019+ over IB uses the mlx OFI provider (I_MPI_FALLBACK is gone since 2019)', () => {
    const p = fabricPreset('intelmpi', 'rdma');
    expect(envOf(p)).toEqual({ I_MPI_FABRICS: 'shm:ofi', FI_PROVIDER: 'mlx' });
    expect(p.forwardUcxPkey).toBe(true);
    expect(envOf(fabricPreset('intelmpi', 'tcp'))).toEqual({ I_MPI_FABRICS: 'shm:ofi', FI_PROVIDER: 'tcp' });
  });

  it('Open MPI over IB selects the UCX PML on mlx5_0:1', () => {
    const p = fabricPreset('openmpi', 'rdma');
    expect(p.launcherArgs.flatMap((g) => g.args)).toEqual(['--mca', 'pml', 'ucx', '--mca', 'btl', '^vader,tcp,openib']);
    expect(envOf(p)).toMatchObject({ UCX_NET_DEVICES: 'mlx5_0:1' });
    expect(envOf(p).UCX_TLS).toBeDefined();
    expect(fabricPreset('openmpi', 'tcp').launcherArgs.flatMap((g) => g.args)).toEqual(['--mca', 'btl_tcp_if_include', 'eth0']);
  });

  it('only RDMA presets expose devices and read the partition key', () => {
    for (const rt of MPI_RUNTIMES) {
      expect(fabricPreset(rt, 'rdma')).toMatchObject({ containerRdmaDevices: true, forwardUcxPkey: true });
      expect(fabricPreset(rt, 'tcp')).toMatchObject({ containerRdmaDevices: false, forwardUcxPkey: false });
    }
  });

  it('drops flags and variables the user sets themselves', () => {
    const p = applyUserOverrides(fabricPreset('openmpi', 'rdma'), ['--mca', 'btl', 'self,tcp'], { UCX_NET_DEVICES: 'mlx5_ib0:1' });
    expect(p.launcherArgs.map((g) => g.key)).toEqual(['mca:pml']);
    expect(p.env.map((e) => e.name)).toEqual(['UCX_TLS']);
    const viaEnv = applyUserOverrides(fabricPreset('openmpi', 'tcp'), [], { OMPI_MCA_btl_tcp_if_include: 'lo' });
    expect(viaEnv.launcherArgs).toEqual([]);
    const hydra = applyUserOverrides(fabricPreset('mpich', 'tcp'), ['-iface', 'ib0'], {});
    expect(hydra.launcherArgs).toEqual([]);
  });
});
