! A simulation code's use of a JAX model: the energy of N atoms and its gradient with respect to
! their positions, from a Lennard-Jones potential written and differentiated in JAX
! (tools/gen_fortran_testdata.py: jax.export of f(positions: f64[n, 3]) -> (energy: f64[],
! gradient: f64[n, 3]) with a symbolic number of atoms n), run through libpjrt from Fortran at
! two system sizes and checked against JAX's own values.
!
!   lennard_jones DATA_DIR      (tests/data/fortran/jax-0.10.2/lennard_jones)
!
! Positions are stored as simulation codes store them, positions(3, n): x, y, z of atom 1, then
! of atom 2, ... In memory that is the C array f64[n, 3] the model takes, so it is passed as it
! is (pjrt_tensor_of reverses the dimensions, copying nothing), and the gradient comes back into
! grad(3, n). A code that keeps x(n, 3) (one column per coordinate) asks for the transpose:
! pjrt_transposed(x); the program checks that this gives the same answer, and that a wrong shape
! is a status with a message, not a crash.
!
! Tolerance: |got - JAX's| <= 1e-12 + 1e-10 * |JAX's|, for the energy and every gradient entry
! (both are double precision from XLA's CPU compiler; they differ in the last bits at most).
! PJRT_EXAMPLE_PLUGIN names the plugin (default "cpu"). Exit status 0 when every check passed.
program lennard_jones
  use, intrinsic :: iso_c_binding, only: c_ptr, c_double, c_int32_t, c_int64_t, c_sizeof
  use pjrt
  implicit none
  real(c_double), parameter :: atol = 1e-12_c_double, rtol = 1e-10_c_double
  character(len=4096) :: data_dir, plugin
  integer :: failures, length, status_env
  type(c_ptr) :: runtime, model
  type(pjrt_signature) :: signature
  type(pjrt_tensor), pointer :: inputs(:)
  type(pjrt_tensor) :: probe_tensor
  type(pjrt_options) :: probe_options

  failures = 0
  if (command_argument_count() /= 1) then
    write (*, '(a)') 'usage: lennard_jones DATA_DIR (tests/data/fortran/jax-0.10.2/lennard_jones)'
    stop 2
  end if
  call get_command_argument(1, data_dir)
  call get_environment_variable('PJRT_EXAMPLE_PLUGIN', plugin, length, status_env)
  if (status_env /= 0 .or. length == 0) plugin = 'cpu'

  ! The library's ABI, and the structs' sizes as C lays them out (pjrt.h, x86-64 and aarch64).
  if (ishft(pjrt_abi_version(), -16) /= PJRT_ABI_VERSION_MAJOR) then
    write (*, '(a, i0)') 'libpjrt has another ABI major version than this module: ', ishft(pjrt_abi_version(), -16)
    stop 1
  end if
  call expect(c_sizeof(probe_tensor) == 88 .and. c_sizeof(probe_options) == 48 .and. c_sizeof(signature) == 32, &
              'pjrt_tensor, pjrt_options, pjrt_signature are 88, 48, 32 bytes as in C')

  call pjrt_check(pjrt_open_runtime(runtime, plugin=trim(plugin)), 'pjrt_open_runtime')
  call pjrt_check(pjrt_load_model(runtime, trim(data_dir) // '/model.jaxexport', model), 'pjrt_load_model')
  call pjrt_check(pjrt_model_signature(model, signature), 'pjrt_model_signature')
  inputs => pjrt_inputs_of(signature)
  write (*, '(a, i0, a, *(i0, :, ", "))') 'model: ', size(inputs), ' input; positions in Fortran order: ', &
    pjrt_fortran_shape(inputs(1))
  call expect(all(pjrt_fortran_shape(inputs(1)) == [3_c_int64_t, -1_c_int64_t]) .and. &
              inputs(1)%dtype == PJRT_DTYPE_F64 .and. signature%n_outputs == 2, &
              'the signature is f64[n, 3] -> (f64[], f64[n, 3]), n symbolic (-1)')

  call check_system(trim(data_dir) // '/n4.txt')
  call check_system(trim(data_dir) // '/n13.txt')

  call pjrt_check(pjrt_model_free(model), 'pjrt_model_free')
  call pjrt_check(pjrt_runtime_free(runtime), 'pjrt_runtime_free')
  if (failures > 0) then
    write (*, '(i0, a)') failures, ' checks failed'
    stop 1
  end if
  write (*, '(a)') 'all checks passed'

contains

  subroutine expect(condition, what)
    logical, intent(in) :: condition
    character(*), intent(in) :: what
    if (condition) then
      write (*, '(2a)') '  ok: ', what
    else
      write (*, '(2a)') 'FAIL: ', what
      failures = failures + 1
    end if
  end subroutine expect

  ! The largest |got - want| / (atol + rtol |want|): at most 1 when every entry is within tolerance.
  pure function worst(got, want) result(ratio)
    real(c_double), intent(in) :: got(:), want(:)
    real(c_double) :: ratio
    ratio = maxval(abs(got - want) / (atol + rtol * abs(want)))
  end function worst

  ! One system of n atoms: its positions and JAX's energy and gradient from `path`, the model run
  ! on them with the positions as they are and transposed from x(n, 3), and a wrong shape.
  subroutine check_system(path)
    character(*), intent(in) :: path
    integer :: unit, n, i
    real(c_double), allocatable, target :: positions(:, :), grad(:, :), want_grad(:, :), columns(:, :), &
                                           rows(:, :), wrong(:, :)
    real(c_double), target :: energy
    real(c_double) :: want_energy
    type(pjrt_tensor) :: outputs(2)
    character(len=:), allocatable :: message
    integer(c_int32_t) :: code
    character(len=80) :: what, difference

    open (newunit=unit, file=path, status='old', action='read')
    read (unit, *) n
    allocate (positions(3, n), grad(3, n), want_grad(3, n))
    do i = 1, n
      read (unit, *) positions(:, i)
    end do
    read (unit, *) want_energy
    do i = 1, n
      read (unit, *) want_grad(:, i)
    end do
    close (unit)

    ! positions(3, n) is f64[n, 3]: no copy; the gradient lands in grad(3, n).
    energy = 0
    grad = 0
    outputs = [pjrt_tensor_of(energy), pjrt_tensor_of(grad)]
    call pjrt_check(pjrt_run(model, [pjrt_tensor_of(positions)], outputs), 'pjrt_run')
    write (what, '(a, i0, a, es10.3)') 'n = ', n, ': energy ', energy
    call expect(outputs(2)%ndim == 2 .and. outputs(2)%dims(1) == n .and. outputs(2)%dims(2) == 3, &
                trim(what) // ', gradient f64[n, 3]')
    write (difference, '(a, es9.2, a, es9.2)') ' (largest differences: energy', abs(energy - want_energy), &
      ', gradient', maxval(abs(grad - want_grad))
    call expect(worst([energy], [want_energy]) <= 1 .and. worst(reshape(grad, [3 * n]), reshape(want_grad, [3 * n])) <= 1, &
                trim(what) // ', energy and gradient match JAX within 1e-12 + 1e-10 |JAX|' // trim(difference) // ')')

    ! A code that stores x(n, 3) asks for the transpose (pjrt_transposed: a copy), and gets the
    ! gradient back as rows(3, n), transposed again to its own layout.
    columns = transpose(positions)
    rows = pjrt_transposed(columns)
    grad = 0
    outputs = [pjrt_tensor_of(energy), pjrt_tensor_of(grad)]
    call pjrt_check(pjrt_run(model, [pjrt_tensor_of(rows)], outputs), 'pjrt_run, transposed')
    call expect(worst(reshape(grad, [3 * n]), reshape(want_grad, [3 * n])) <= 1, &
                trim(what) // ', positions kept as x(n, 3), passed through pjrt_transposed')

    ! positions(4, n) is f64[n, 4]: the model takes f64[n, 3]; a status says so.
    allocate (wrong(4, n))
    wrong = 0
    if (pjrt_ok(pjrt_run(model, [pjrt_tensor_of(wrong)], outputs), message, code)) then
      call expect(.false., 'a wrong shape is refused')
    else
      call expect(code == PJRT_CODE_INVALID_ARGUMENT, 'a wrong shape is refused: ' // message)
    end if
  end subroutine check_system
end program lennard_jones
